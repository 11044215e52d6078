// The SHA-256 of a request's key, remembered per connection: a keep-alive client sends the same
// key on every request, so the hash computed for its previous request is reused when the key is
// the same (compared in full), and computed again otherwise. The Node adapters' hash (Express,
// Koa, Fastify, Nest); the Web adapters hash with Web Crypto, per request.
//
// Safety: the key is kept only in this process's memory, for as long as the connection it came
// on stays open, next to the hash it produced; it is never written anywhere (logs, errors, the
// store: a shared store still sees hashes only), and a connection only ever compares its own
// requests with each other (a proxy's shared upstream connection just misses more often).

import { keyHash } from "../protocol/key-hash";

interface Last {
  key: string;
  hash: string;
}

const byConnection = new WeakMap<object, Last>();

/** SHA-256 (base64) of `key`, sent on the request `req`. */
export function connectionKeyHash(req: { readonly socket?: unknown }, key: string): string {
  const socket = req.socket;
  if (typeof socket !== "object" || socket === null) return keyHash(key);
  const last = byConnection.get(socket);
  if (last !== undefined && last.key === key) return last.hash;
  const hash = keyHash(key);
  if (last === undefined) byConnection.set(socket, { key, hash });
  else {
    last.key = key;
    last.hash = hash;
  }
  return hash;
}
