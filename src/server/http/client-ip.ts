// The caller's address for IP allow-lists and the root-key failure limit: the socket's, or with
// `trustProxy` the last non-empty `X-Forwarded-For` entry, without a port: the address the proxy in
// front of the service saw. The entries before it are whatever the caller sent (a proxy appends to
// the header), so they never decide.

/** `1.2.3.4:80` → `1.2.3.4`, `[::1]:80` → `::1`, `::ffff:1.2.3.4` → `1.2.3.4`; others unchanged. */
export function plainAddress(address: string): string {
  let a = address.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(a);
  if (bracketed) a = bracketed[1]!;
  else if (/^[^:]+:\d+$/.test(a)) a = a.slice(0, a.indexOf(":"));
  return a.toLowerCase().startsWith("::ffff:") && a.includes(".") ? a.slice(7) : a;
}

/** The last socket address made plain, and what it gave: a connection's requests all come from one. */
let lastSocketAddress: string | undefined;
let lastPlain = "";

export function clientIp(socketAddress: string | undefined, forwardedFor: string | string[] | undefined, trustProxy: boolean): string {
  if (trustProxy && forwardedFor !== undefined) {
    const list = Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor;
    const last = list
      .split(",")
      .map((part) => part.trim())
      .findLast((part) => part !== "");
    if (last !== undefined) return plainAddress(last);
  }
  if (socketAddress !== lastSocketAddress) {
    lastPlain = plainAddress(socketAddress ?? "");
    lastSocketAddress = socketAddress;
  }
  return lastPlain;
}
