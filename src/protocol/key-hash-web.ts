// A key's SHA-256 in base64 with Web Crypto (`crypto.subtle`, asynchronous), for runtimes without
// node:crypto (Bun, Deno, Cloudflare Workers, edge runtimes): the same value as key-hash.ts gives.

/** What a key hash looks like: 43 base64 characters and the one `=` of 32 bytes. */
export const KEY_HASH_PATTERN = /^[A-Za-z0-9+/]{43}=$/;

const encoder = new TextEncoder();

/** base64(SHA-256(key)), 44 characters, with `crypto.subtle.digest`. */
export async function webKeyHash(key: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(key)));
  let binary = "";
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary);
}
