// Recoverable keys: the AES-256-GCM copy of a key that an API storing keys keeps, sealed with the
// service's key-encryption key (never part of the state) and bound to its key record.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/** Environment variable holding the key-encryption key (32 bytes, base64 or hex). */
export const ENCRYPTION_KEY_ENV = "KEYGUARD_ENCRYPTION_KEY";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The 32 bytes of a key-encryption key written as 64 hex digits or as base64 (standard or URL
 * alphabet, padding optional); undefined for anything else.
 */
export function parseEncryptionKey(text: string): Buffer | undefined {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, "hex");
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(t)) return undefined;
  const bytes = Buffer.from(t.replace(/-/g, "+").replace(/_/g, "/"), "base64");
  return bytes.length === 32 ? bytes : undefined;
}

/** Associated data of a key's sealed copy: the copy opens only for the record it was made for. */
function boundTo(record: { workspaceId: string; id: string }): Buffer {
  return Buffer.from(`${record.workspaceId}\0${record.id}`, "utf8");
}

/** Seals and opens keys with one key-encryption key. */
export class KeyVault {
  readonly #kek: Buffer;

  constructor(kek: Buffer) {
    if (kek.length !== 32) throw new RangeError("KeyVault: the key-encryption key must be 32 bytes.");
    this.#kek = Buffer.from(kek);
  }

  /** `v1.<iv>.<tag>.<ciphertext>` (base64url) of `plaintext`, bound to `record`. */
  seal(plaintext: string, record: { workspaceId: string; id: string }): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#kek, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(boundTo(record));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), body].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
  }

  /**
   * The key sealed in `sealed` for `record`; undefined when it cannot be opened (another
   * key-encryption key, another record, or damaged).
   */
  open(sealed: string, record: { workspaceId: string; id: string }): string | undefined {
    const parts = sealed.split(".");
    if (parts.length !== 4 || parts[0] !== VERSION) return undefined;
    const [iv, tag, body] = parts.slice(1).map((p) => Buffer.from(p, "base64url"));
    if (iv!.length !== IV_BYTES || tag!.length !== TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#kek, iv!, { authTagLength: TAG_BYTES });
      decipher.setAAD(boundTo(record));
      decipher.setAuthTag(tag!);
      return Buffer.concat([decipher.update(body!), decipher.final()]).toString("utf8");
    } catch {
      return undefined;
    }
  }
}
