// Lazy migration from another key service (`migrateFrom`): a key keyguard's service answers
// NOT_FOUND (and only then) is verified once at the old service without a charge (`credits: {cost:
// 0}`), its record read there (`keys.getKey`) and imported into keyguard's service
// (`keys.migrateKeys`, by the SHA-256 the middleware holds already); the request is then verified at
// keyguard's service, which charges it once. One import per key at a time in a process; across a
// fleet keyguard's service refuses a second import of a hash it holds. Never holds the key past the call.

import type { KeyServiceClient } from "../client";
import type { CallOptions } from "../client/options";
import { createLogThrottle, type Logger } from "../logger";
import { migrationRecord } from "../protocol/migration-record";
import type { VerifyKeyRequest, VerifyKeyResult } from "../protocol/types";

/** `migrateFrom`: the old key service whose keys move to keyguard's service on their first request. */
export interface MigrateFromOptions {
  /** Base URL of the old service (any v2 service: the hosted one or another keyguard). Required unless `client`. */
  baseUrl?: string;
  /** Root key of the old service: `verify_key` and `read_key` on `apiId`. Required unless `client`. */
  rootKey?: string;
  /** A client for the old service, built with `createClient()`; replaces `baseUrl` and `rootKey`. */
  client?: KeyServiceClient;
  /** The API at the old service that the keys come from (named in the log; scope the old root key to it). Required. */
  apiId: string;
  /** keyguard's API the keys are imported into. Required. */
  intoApiId: string;
  /** A `sha256` key migration of keyguard's workspace (`service.createKeyMigration({ algorithm: "sha256" })`). Required. */
  migrationId: string;
  /** After this moment (a Date or Unix ms) an unknown key is no longer looked for at the old service. Default: never. */
  until?: Date | number;
}

/** What one request's import attempt came to (shared by the requests of one process that met the key at once). */
type ImportOutcome =
  /** keyguard's service holds the key now (imported here, or by another instance): verify there. */
  | { readonly kind: "imported" | "held" }
  /** The old service refused the key (its answer at cost 0: NOT_FOUND, DISABLED, EXPIRED, …); nothing imported. */
  | { readonly kind: "refused"; readonly result: Readonly<VerifyKeyResult> }
  /** The old service could not be asked (down, slow, its root key refused): the outage policy answers. */
  | { readonly kind: "old-failed"; readonly error: unknown }
  /** The old service said valid but the import failed: each request is verified at the old service instead. */
  | { readonly kind: "import-failed"; readonly error: unknown };

export interface LazyMigrationSettings {
  readonly old: KeyServiceClient;
  /** keyguard's service (the middleware's own client). */
  readonly into: KeyServiceClient;
  readonly apiId: string;
  readonly intoApiId: string;
  readonly migrationId: string;
  /** Unix ms; undefined = never ends. */
  readonly until: number | undefined;
  readonly callOptions: CallOptions;
  readonly logger: Logger;
  /** Forgets what the stores keep for the key (the NOT_FOUND answers), here and on every instance. */
  forget(keyHash: string): Promise<void>;
}

export interface LazyMigration {
  /** Whether an unknown key with this hash is still looked for at the old service. */
  applies(keyHash: string, now: number): boolean;
  /** Imports the key, once per hash at a time in this process. */
  importKey(key: string, keyHash: string): Promise<ImportOutcome>;
  /** A request's own verification at the old service (after a failed import): it charges there. */
  verifyAtOld(body: VerifyKeyRequest): Promise<Readonly<VerifyKeyResult>>;
}

/** Hashes known to be at keyguard's service, never sent to the old service again (bounded). */
const HELD_MAX = 10_000;

const errorFields = (e: unknown) => {
  const o = (typeof e === "object" && e !== null ? e : {}) as { code?: unknown; status?: unknown; requestId?: unknown };
  return { error: e instanceof Error ? e.name : typeof e, code: o.code, status: o.status, requestId: o.requestId };
};

export function createLazyMigration(settings: LazyMigrationSettings): LazyMigration {
  const { old, into, callOptions, logger } = settings;
  const inflight = new Map<string, Promise<ImportOutcome>>();
  const held = new Set<string>();
  const throttle = createLogThrottle();

  const remember = (keyHash: string) => {
    if (held.size >= HELD_MAX) held.delete(held.values().next().value!);
    held.add(keyHash);
  };

  async function run(key: string, keyHash: string): Promise<ImportOutcome> {
    let found: Readonly<VerifyKeyResult>;
    try {
      // No charge at the old service: the request is charged once, at keyguard's, after the import.
      found = await old.keys.verifyKey({ key, credits: { cost: 0 } }, callOptions);
    } catch (error) {
      const t = throttle("old");
      if (t.log) {
        logger.warn(
          { ...errorFields(error), apiId: settings.apiId, suppressedSinceLastLog: t.suppressed },
          "apiKeyAuth: the old key service could not be asked about an unknown key; answering as for a service failure",
        );
      }
      return { kind: "old-failed", error };
    }
    if (found.valid !== true || found.code !== "VALID" || typeof found.keyId !== "string") return { kind: "refused", result: found };
    try {
      const info = await old.keys.getKey({ keyId: found.keyId }, callOptions);
      const answer = await into.keys.migrateKeys(
        { migrationId: settings.migrationId, apiId: settings.intoApiId, keys: [migrationRecord(keyHash, info)] },
        callOptions,
      );
      const imported = answer.migrated.some((m) => m.hash === keyHash);
      if (!imported && !answer.failed.includes(keyHash)) throw new Error("keys.migrateKeys answered without the key");
      remember(keyHash);
      await settings.forget(keyHash);
      const keyId = imported ? answer.migrated.find((m) => m.hash === keyHash)!.keyId : undefined;
      logger.debug?.(
        { oldKeyId: found.keyId, keyId, apiId: settings.apiId, intoApiId: settings.intoApiId },
        imported ? "apiKeyAuth: key imported from the old service" : "apiKeyAuth: key already held by the key service",
      );
      return { kind: imported ? "imported" : "held" };
    } catch (error) {
      const t = throttle("import");
      if (t.log) {
        logger.warn(
          { ...errorFields(error), oldKeyId: found.keyId, apiId: settings.apiId, suppressedSinceLastLog: t.suppressed },
          "apiKeyAuth: importing a key from the old service failed; verifying it there instead",
        );
      }
      return { kind: "import-failed", error };
    }
  }

  return {
    applies(keyHash, now) {
      return (settings.until === undefined || now < settings.until) && !held.has(keyHash);
    },
    importKey(key, keyHash) {
      const joined = inflight.get(keyHash);
      if (joined !== undefined) return joined;
      const mine = run(key, keyHash).finally(() => inflight.delete(keyHash));
      inflight.set(keyHash, mine);
      return mine;
    },
    verifyAtOld: (body) => old.keys.verifyKey(body, callOptions),
  };
}
