// The SHA-256 of a request's key, remembered per connection: a keep-alive client sends the same
// key on every request, so the hash computed for its previous request is reused when the key is
// the same (compared in full), and computed again otherwise. The Node adapters' hash (Express,
// Koa, Fastify, Nest), and the Web adapters' where a server on Node lends the request's socket
// (Hono on @hono/node-server); elsewhere they hash per request.
//
// Safety: the key is kept only in this process's memory, for as long as the connection it came
// on stays open, next to the hash it produced; it is never written anywhere (logs, errors, the
// store: a shared store still sees hashes only), and a connection only ever compares its own
// requests with each other (a proxy's shared upstream connection just misses more often).

interface Last {
  key: string;
  hash: string;
}

/**
 * `hash` remembered per connection: the hash of a request's key, reused for the next request of
 * the same connection with the same key. A hash that comes as a promise (Web Crypto) is not kept.
 * Loads no node: module (the Web adapters use it where a server on Node lends its socket).
 */
export function perConnection<H extends string | PromiseLike<string>>(
  hash: (key: string) => H,
): (req: { readonly socket?: unknown }, key: string) => H | string {
  const byConnection = new WeakMap<object, Last>();
  return (req, key) => {
    const socket = req.socket;
    if (typeof socket !== "object" || socket === null) return hash(key);
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
