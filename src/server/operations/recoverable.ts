// Recoverable keys in the operations: when a key is sealed (createKey, rerollKey) and when its
// plaintext is given back (getKey, listKeys with `decrypt: true`), with production's answers
// (the permissions they need, encrypt_key and decrypt_key, are in the operations' authorisation).
import { ServiceError } from "../errors";
import { keyHash } from "../../protocol/key-hash";
import type { KeyVault } from "../domain/key-vault";
import type { OpContext } from "./operation";
import type { ApiRecord, KeyRecord } from "../records";

/** createKey's 404, also for a root key lacking the permissions (production masks them). */
export const NOT_FOUND_API = (): ServiceError => new ServiceError("data.api_not_found", "The specified API was not found.");

/** The vault, or 412 when the service has no key-encryption key. */
export function requireVault(ctx: OpContext): KeyVault {
  if (ctx.vault) return ctx.vault;
  throw new ServiceError(
    "application.precondition_failed",
    "Vault hasn't been set up. Start the local service with KEYGUARD_ENCRYPTION_KEY (or the encryptionKey or encryptionKeyFile option) to store keys.",
  );
}

/** 412 unless the API stores keys (turned on with the admin surface's `createApi({ storeKeys: true })`). */
export function requireStorage(api: ApiRecord | undefined, detail: string): void {
  if (!api?.storeKeys) throw new ServiceError("application.precondition_failed", detail);
}

/**
 * The key itself, opened from its sealed copy; undefined when it has none, or the copy does not
 * open (another key-encryption key) or does not match the key's hash.
 */
export function plaintextOf(vault: KeyVault | undefined, key: KeyRecord): string | undefined {
  if (!vault || key.encrypted === undefined) return undefined;
  const plaintext = vault.open(key.encrypted, key);
  return plaintext !== undefined && keyHash(plaintext) === key.hash ? plaintext : undefined;
}
