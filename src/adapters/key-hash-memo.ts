// The SHA-256 of a request's key, remembered: per connection where there is one (a keep-alive
// client sends the same key on every request, so the hash computed for its previous request is
// reused when the key is the same, compared in full), else among the last keys hashed without one
// (the Web path on Bun, Deno and edge runtimes, where the request lends no connection). The Node
// adapters' hash (Express, Koa, Fastify, Nest), and the Web adapters'.
//
// Safety: a key is kept only in this process's memory, next to the hash it produced, for as long
// as the connection it came on stays open, or (without a connection) until RECENT_KEYS other keys
// have been hashed after it; it is never written anywhere (logs, errors, the store: a shared store
// still sees hashes only), and a key only ever answers for the same key, compared in full.

interface Last {
  key: string;
  hash: string;
}

/** How many keys hashed without a connection are remembered (the oldest goes first). */
export const RECENT_KEYS = 1024;

/**
 * `hash` remembered per connection (the hash of a request's key, reused for the next request of
 * the same connection with the same key), or, for a request without a connection, among the last
 * {@link RECENT_KEYS} keys. A hash that comes as a promise (Web Crypto) is not kept. Loads no
 * node: module (the Web adapters use it too).
 */
export function rememberedKeyHash<H extends string | PromiseLike<string>>(
  hash: (key: string) => H,
): (req: { readonly socket?: unknown }, key: string) => H | string {
  const byConnection = new WeakMap<object, Last>();
  const recent = new Map<string, string>();
  const recentHash = (key: string): H | string => {
    const known = recent.get(key);
    if (known !== undefined) return known;
    const out = hash(key);
    if (typeof out !== "string") return out;
    if (recent.size >= RECENT_KEYS) recent.delete(recent.keys().next().value!);
    recent.set(key, out);
    return out;
  };
  return (req, key) => {
    const socket = req.socket;
    if (typeof socket !== "object" || socket === null) return recentHash(key);
    const last = byConnection.get(socket);
    if (last !== undefined && last.key === key) return last.hash;
    const out = hash(key);
    if (typeof out !== "string") return out;
    if (last === undefined) byConnection.set(socket, { key, hash: out });
    else {
      last.key = key;
      last.hash = out;
    }
    return out;
  };
}
