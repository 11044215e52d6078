// A code host's side of the secret scanning partner protocol, made locally for tests: an ECDSA
// P-256 key pair from node:crypto, the public keys document it publishes, and reports signed with it.
import { createHash, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { writeFileSync } from "node:fs";

export interface ScanningKey {
  id: string;
  publicPem: string;
  privateKey: KeyObject;
}

/** A new signing key; its identifier is the hex SHA-256 of its public key, as the host's are. */
export function scanningKey(): ScanningKey {
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const publicPem = publicKey.export({ type: "spki", format: "pem" }).toString();
  return { id: createHash("sha256").update(publicPem).digest("hex"), publicPem, privateKey };
}

/** The public keys document listing these keys (the first is current). */
export function keysDocument(keys: readonly ScanningKey[]): string {
  return JSON.stringify({ public_keys: keys.map((k, i) => ({ key_identifier: k.id, key: k.publicPem, is_current: i === 0 })) });
}

/** Writes the document to `file`; returns the path. */
export function writeKeysDocument(file: string, keys: readonly ScanningKey[]): string {
  writeFileSync(file, keysDocument(keys));
  return file;
}

/** The protocol's headers for `body` signed with `key` (base64 DER over the raw bytes). */
export function signedHeaders(key: ScanningKey, body: string | Buffer): Record<string, string> {
  const signature = sign("sha256", Buffer.from(body), { key: key.privateKey, dsaEncoding: "der" }).toString("base64");
  return {
    "content-type": "application/json",
    "Github-Public-Key-Identifier": key.id,
    "Github-Public-Key-Signature": signature,
  };
}

export interface Found {
  token: string;
  type?: string;
  url?: string;
  source?: string;
}

/** A report's body: the found tokens with the host's fields. */
export function reportBody(found: readonly Found[]): string {
  return JSON.stringify(
    found.map((f) => ({
      token: f.token,
      type: f.type ?? "keyguard_api_key",
      url: f.url ?? "https://github.com/octo/repo/blob/0123abc/config.js",
      source: f.source ?? "content",
    })),
  );
}

/** POSTs a signed report to the service at `baseUrl`; the answer's status and parsed body. */
export async function sendReport(
  baseUrl: string,
  key: ScanningKey,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown; text: string }> {
  const res = await fetch(`${baseUrl}/secret-scanning/github`, {
    method: "POST",
    headers: { ...signedHeaders(key, body), ...headers },
    body,
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text };
}

/** The protocol's `token_hash`: hex SHA-256 of the token. */
export const tokenHash = (token: string): string => createHash("sha256").update(token).digest("hex");
