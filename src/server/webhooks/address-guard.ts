// The webhook requests' guard against server-side request forgery: an endpoint's host must resolve
// to public addresses only. Loopback, private, link-local, carrier-grade NAT, multicast and
// unspecified addresses (IPv4, IPv6, IPv4-mapped IPv6) are refused unless the operator allows them
// (`--webhooks-allow-private`). Checked at every attempt, on the addresses the request will use.
import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

const BLOCKED = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  BLOCKED.addSubnet(net, bits, "ipv4");
for (const [net, bits] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const)
  BLOCKED.addSubnet(net, bits, "ipv6");

/** Whether an address (literal) is not a public one. */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return BLOCKED.check(mapped, "ipv4");
  const family = isIP(address);
  if (family === 0) return true;
  return BLOCKED.check(address, family === 4 ? "ipv4" : "ipv6");
}

/**
 * The address to connect to for `url`'s host: its first resolved address, when every address it
 * resolves to is public (or private ones are allowed). Throws a message for the delivery log otherwise.
 */
export async function resolveAllowed(url: URL, allowPrivate: boolean): Promise<string> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  if (addresses.length === 0) throw new Error(`${host} does not resolve`);
  if (!allowPrivate) {
    const refused = addresses.find(isPrivateAddress);
    if (refused !== undefined)
      throw new Error(`${host} resolves to a non-public address (${refused}); refused without --webhooks-allow-private`);
  }
  return addresses[0]!;
}
