// The local key service's core: the store, the bootstrap (workspace, API, root key), the
// in-process admin surface (not reachable over HTTP) and fault injection.
import { LocalServiceArgumentError } from "./errors";
import { ALL_ROOT_PERMISSIONS } from "../protocol/contract/root-permissions";
import { PERMISSION_TUPLE } from "./operations/auth";
import { newId } from "./domain/ids";
import { generateKey, KEY_FORMATS, type KeyFormat } from "./domain/key-material";
import { allowListEntryProblem } from "./domain/ip-allowlist";
import { keyHash } from "../protocol/key-hash";
import { ENCRYPTION_KEY_ENV, KeyVault } from "./domain/key-vault";
import type { ServiceMetrics } from "./metrics";
import type { LocalServiceConfig } from "./options";
import { BOOTSTRAP_META, exportState, putWorkspace } from "./storage/state-file";
import { KEY_MIGRATION_ALGORITHMS, addMigration, readMigrations } from "./operations/key-migrations";
import type { OpContext } from "./operations/operation";
import type { Storage, StorageTx } from "./storage/seam";
import { RootKeyUses } from "./operations/root-key-uses";
import type {
  ApiRecord,
  KeyMigrationAlgorithm,
  LeakResponse,
  LocalState,
  RootKeyRecord,
  VerificationEvent,
  WebhookMessage,
} from "./records";
import { StoreFailureLog } from "./storage/store-failures";
import { VerificationRecorder } from "./storage/verification-events";
import { AuditRetention } from "./storage/audit-retention";
import { WebhookDispatcher } from "./webhooks/dispatcher";
import { ExpiryNotices } from "./webhooks/expiry-notices";
import { enqueueNoticed } from "./webhooks/noticed";

export interface UnavailableOptions {
  /** Fail only the next N requests, then recover. Default: every request until turned off. */
  failures?: number;
  /** Seconds sent in `Retry-After`. Default: 1. */
  retryAfter?: number;
}

/**
 * The admin surface of a running local key service. Bad arguments reject with
 * `LocalServiceArgumentError`; a change the store cannot keep rejects with the store's error and
 * is not kept.
 */
export interface LocalKeyService {
  /** The bootstrap workspace (the default for the methods below). */
  readonly workspaceId: string;
  /** The bootstrap API. */
  readonly apiId: string;
  /** The bootstrap root key (holds every permission). */
  readonly rootKey: string;
  /** Whether `rootKey` was generated at start (neither given nor taken from UNKEY_ROOT_KEY). */
  readonly rootKeyGenerated: boolean;
  /** Whether the store already held a state (a bootstrap) when the service started. */
  readonly restored: boolean;
  /** Whether the service's own listener serves HTTPS (the `tls` option): e.g. its cookies may be `Secure`. */
  readonly secure: boolean;
  createWorkspace(input?: { name?: string }): Promise<{ workspaceId: string }>;
  /**
   * `ipWhitelist`: caller addresses or CIDR ranges allowed to verify this API's keys; others get FORBIDDEN.
   * `storeKeys`: keep an encrypted copy of each recoverable key (needs an encryption key).
   * `keyFormat`: `"plain"` (the default) or `"checksummed"` (`prefix_kg0…`, rejected offline when mistyped).
   * `leakResponse`: what a secret-scanning report of one of its keys does, `"disable"` (the default) or `"flag"`.
   * `creditsLowThreshold`: a charge that takes a key's remaining credits from above it to at or
   * below it sends the `key.credits_low` webhook event (a whole number ≥ 1; default: none).
   */
  createApi(input: CreateApiInput): Promise<{ apiId: string }>;
  /** `permissions`: tuples such as `api.*.verify_key` or `api.<apiId>.create_key`. */
  createRootKey(input: { workspaceId?: string; permissions: readonly string[] }): Promise<{ rootKey: string }>;
  /**
   * Registers a key migration for `keys.migrateKeys` (production's support staff create these).
   * `algorithm`: how the imported hashes were made, `"sha256"` (base64 SHA-256 of the key, the
   * default) or `"github.com/seamapi/prefixed-api-key"` (hex SHA-256 of the key's long token).
   * `migrationId`: the id to use (3..255 characters), default a new `mig_…` id.
   */
  createKeyMigration(input?: CreateKeyMigrationInput): Promise<{ migrationId: string }>;
  /** Answer 503 `service_unavailable` (with `Retry-After`) to every request, or to the next N. */
  setUnavailable(on: boolean | UnavailableOptions): void;
  /** The whole state, as one consistent copy (hashes and sealed copies only, never a plaintext key). */
  exportState(): Promise<LocalState>;
  /**
   * Writes the verification events noted so far to the store now (the service does it every
   * second, every 1,000 events and on close): then analytics.getVerifications and lastUsedAt see them.
   * The counts of ratelimit.limit outcomes go with them (then ratelimit.getNamespaceUsage sees them).
   */
  flushVerifications(): Promise<void>;
  /** The service clock. */
  now(): number;
}

export interface CreateApiInput {
  workspaceId?: string;
  name: string;
  ipWhitelist?: string[];
  storeKeys?: boolean;
  keyFormat?: KeyFormat;
  leakResponse?: LeakResponse;
  creditsLowThreshold?: number;
}

export interface CreateKeyMigrationInput {
  workspaceId?: string;
  algorithm?: KeyMigrationAlgorithm;
  migrationId?: string;
}

/** The name of the root key the operator gives (rootKey, UNKEY_ROOT_KEY): the audit log's actor for its requests. */
const BOOTSTRAP_ROOT_KEY_NAME = "bootstrap";

interface Bootstrap {
  workspaceId: string;
  apiId: string;
  restored: boolean;
}

/** Finds the bootstrap workspace, API and root key in the store, creating what is missing. */
async function bootstrap(tx: StorageTx, rootKey: string, now: number, storeKeys: boolean): Promise<Bootstrap> {
  const raw = await tx.getMeta(BOOTSTRAP_META);
  const stored = raw === undefined ? undefined : (JSON.parse(raw) as { workspaceId?: string; apiId?: string });
  let workspaceId = stored?.workspaceId;
  if (!workspaceId || !(await tx.get("workspaces", workspaceId))) {
    workspaceId = newId("ws");
    await putWorkspace(tx, { id: workspaceId, name: "default", createdAt: now });
  }
  let apiId = stored?.apiId;
  const api = apiId === undefined ? undefined : await tx.get("apis", apiId);
  if (!apiId || api?.workspaceId !== workspaceId) {
    apiId = newId("api");
    const created: ApiRecord = { id: apiId, workspaceId, name: "default", createdAt: now };
    if (storeKeys) created.storeKeys = true;
    await tx.put("apis", created);
  } else if (storeKeys && !api.storeKeys) {
    // Turning storage on is not retroactive: keys created before have no copy.
    await tx.put("apis", { ...api, storeKeys: true });
  }
  if (stored?.workspaceId !== workspaceId || stored.apiId !== apiId) {
    await tx.setMeta(BOOTSTRAP_META, JSON.stringify({ workspaceId, apiId }));
  }
  const hash = keyHash(rootKey);
  const root = await tx.rootKeyByHash(hash);
  if (!root) {
    const created: RootKeyRecord = { id: newId("rk"), workspaceId, hash, permissions: [...ALL_ROOT_PERMISSIONS], createdAt: now };
    created.name = BOOTSTRAP_ROOT_KEY_NAME;
    await tx.put("rootKeys", created);
  } else if (root.workspaceId === workspaceId) {
    // The bootstrap root key holds every permission, also those of operations added since it was
    // stored, and has a name (the audit log's actor), also when stored by an earlier version.
    const missing = ALL_ROOT_PERMISSIONS.filter((p) => !root.permissions.includes(p));
    if (missing.length > 0 || root.name === undefined) {
      await tx.put("rootKeys", { ...root, permissions: [...root.permissions, ...missing], name: root.name ?? BOOTSTRAP_ROOT_KEY_NAME });
    }
  }
  return { workspaceId, apiId, restored: stored !== undefined };
}

export class ServiceCore implements LocalKeyService {
  readonly failures: StoreFailureLog;
  /** Seals and opens recoverable keys; undefined without a key-encryption key. */
  readonly vault: KeyVault | undefined;
  /** Verification events on their way to the store. */
  readonly events: VerificationRecorder;
  /** Deletes the audit records older than their retention. */
  readonly auditRetention: AuditRetention;
  /** Delivers the webhook outbox. */
  readonly webhooks: WebhookDispatcher;
  /** The root keys' last uses, written at most once a minute per key. */
  readonly rootKeyUses: RootKeyUses;
  private fault: { left: number; retryAfter: number } | undefined;
  /** Shutting down: the readiness probe answers 503 (set when a close begins). */
  draining = false;

  private constructor(
    readonly config: LocalServiceConfig,
    readonly store: Storage,
    readonly rootKey: string,
    private readonly boot: Bootstrap,
    /** The service's Prometheus metrics, when on (`store` is then already metered). */
    readonly metrics: ServiceMetrics | undefined,
  ) {
    this.failures = new StoreFailureLog(config.logger, store.kind);
    this.rootKeyUses = new RootKeyUses(store.direct, config.logger);
    this.vault = config.encryptionKey && new KeyVault(config.encryptionKey);
    this.events = new VerificationRecorder(store, config.verificationRetentionMs, config.now, config.logger, this.failures);
    this.auditRetention = new AuditRetention(store, config.auditRetentionMs, config.now, config.logger, this.failures);
    this.webhooks = new WebhookDispatcher(store, {
      allowPrivate: config.webhooksAllowPrivate,
      vault: this.vault,
      retryWindowMs: config.webhookRetryMs,
      leaseMs: config.webhookLeaseMs,
      now: config.now,
      logger: config.logger,
      failures: this.failures,
      expiryNotices: new ExpiryNotices(store, config.webhookExpiryNoticeMs, config.now),
    });
  }

  /** Opens the service over `store`: finds or creates the bootstrap, in one transaction. */
  static async open(config: LocalServiceConfig, store: Storage, metrics?: ServiceMetrics): Promise<ServiceCore> {
    const rootKey = config.rootKey ?? generateKey("root", 24).key;
    const boot = await store.transaction((tx) => bootstrap(tx, rootKey, config.now(), config.storeKeys));
    return new ServiceCore(config, store, rootKey, boot, metrics);
  }

  get workspaceId(): string {
    return this.boot.workspaceId;
  }

  get apiId(): string {
    return this.boot.apiId;
  }

  get restored(): boolean {
    return this.boot.restored;
  }

  get secure(): boolean {
    return this.config.secure;
  }

  get rootKeyGenerated(): boolean {
    return this.config.rootKey === undefined;
  }

  now(): number {
    return this.config.now();
  }

  async createWorkspace(input: { name?: string } = {}): Promise<{ workspaceId: string }> {
    if (input.name !== undefined && (typeof input.name !== "string" || input.name === "")) {
      throw new LocalServiceArgumentError("createWorkspace: name must be a non-empty string when given.");
    }
    const id = newId("ws");
    await this.store.transaction((tx) => putWorkspace(tx, { id, name: input.name ?? "workspace", createdAt: this.now() }));
    return { workspaceId: id };
  }

  async createApi(input: CreateApiInput): Promise<{ apiId: string }> {
    if (typeof input.name !== "string" || input.name === "") {
      throw new LocalServiceArgumentError("createApi: name must be a non-empty string.");
    }
    const ips = input.ipWhitelist;
    const badIp = Array.isArray(ips) ? ips.find((ip) => typeof ip !== "string" || allowListEntryProblem(ip) !== undefined) : undefined;
    if (ips !== undefined && (!Array.isArray(ips) || badIp !== undefined)) {
      throw new LocalServiceArgumentError(
        `createApi: ipWhitelist must be an array of addresses or CIDR ranges, e.g. ["127.0.0.1", "10.0.0.0/8"]${badIp === undefined ? "" : `; ${JSON.stringify(badIp)} is not one`}.`,
      );
    }
    const keyFormat = input.keyFormat ?? "plain";
    if (!KEY_FORMATS.includes(keyFormat)) {
      throw new LocalServiceArgumentError(`createApi: keyFormat must be one of ${KEY_FORMATS.map((f) => JSON.stringify(f)).join(", ")}.`);
    }
    const storeKeys = input.storeKeys ?? false;
    if (typeof storeKeys !== "boolean") throw new LocalServiceArgumentError("createApi: storeKeys must be true or false.");
    if (storeKeys && !this.vault) {
      throw new LocalServiceArgumentError(
        `createApi: storeKeys needs a key-encryption key. Start the service with ${ENCRYPTION_KEY_ENV}, encryptionKey or encryptionKeyFile.`,
      );
    }
    const leakResponse = input.leakResponse;
    if (leakResponse !== undefined && leakResponse !== "disable" && leakResponse !== "flag") {
      throw new LocalServiceArgumentError('createApi: leakResponse must be "disable" or "flag".');
    }
    const threshold = input.creditsLowThreshold;
    if (threshold !== undefined && !(Number.isSafeInteger(threshold) && threshold >= 1)) {
      throw new LocalServiceArgumentError("createApi: creditsLowThreshold must be a whole number of credits, 1 or more.");
    }
    const id = newId("api");
    await this.store.transaction(async (tx) => {
      const api: ApiRecord = { id, workspaceId: await this.workspace(tx, input.workspaceId), name: input.name, createdAt: this.now() };
      if (ips) api.ipWhitelist = [...ips];
      if (storeKeys) api.storeKeys = true;
      if (keyFormat !== "plain") api.keyFormat = keyFormat;
      if (leakResponse !== undefined) api.leakResponse = leakResponse;
      if (threshold !== undefined) api.creditsLowThreshold = threshold;
      await tx.put("apis", api);
    });
    return { apiId: id };
  }

  async createRootKey(input: { workspaceId?: string; permissions: readonly string[] }): Promise<{ rootKey: string }> {
    const bad = (input.permissions ?? []).find((p) => typeof p !== "string" || !PERMISSION_TUPLE.test(p));
    if (!Array.isArray(input.permissions) || bad !== undefined) {
      throw new LocalServiceArgumentError(
        `createRootKey: invalid permission ${JSON.stringify(bad)}. Use tuples like "api.*.verify_key" or "rbac.*.create_permission".`,
      );
    }
    const { key, hash } = generateKey("root", 24);
    await this.store.transaction(async (tx) => {
      const workspaceId = await this.workspace(tx, input.workspaceId);
      await tx.put("rootKeys", { id: newId("rk"), workspaceId, hash, permissions: [...input.permissions], createdAt: this.now() });
    });
    return { rootKey: key };
  }

  async createKeyMigration(input: CreateKeyMigrationInput = {}): Promise<{ migrationId: string }> {
    const algorithm = input.algorithm ?? "sha256";
    if (!KEY_MIGRATION_ALGORITHMS.includes(algorithm)) {
      throw new LocalServiceArgumentError(
        `createKeyMigration: algorithm ${JSON.stringify(algorithm)} is not supported. Use ${KEY_MIGRATION_ALGORITHMS.map((a) => JSON.stringify(a)).join(" or ")}.`,
      );
    }
    const id = input.migrationId ?? newId("mig");
    if (typeof id !== "string" || id.length < 3 || id.length > 255) {
      throw new LocalServiceArgumentError("createKeyMigration: migrationId must be a string of 3 to 255 characters.");
    }
    await this.store.transaction(async (tx) => {
      const workspaceId = await this.workspace(tx, input.workspaceId);
      if (Object.hasOwn(await readMigrations(tx), id)) {
        throw new LocalServiceArgumentError(`createKeyMigration: a migration with id ${JSON.stringify(id)} already exists.`);
      }
      await addMigration(tx, { id, workspaceId, algorithm, createdAt: this.now() });
    });
    return { migrationId: id };
  }

  setUnavailable(on: boolean | UnavailableOptions): void {
    if (on === false) {
      this.fault = undefined;
      return;
    }
    const opts = on === true ? {} : on;
    const left = opts.failures ?? Infinity;
    const retryAfter = opts.retryAfter ?? 1;
    if (!(left > 0) || !Number.isInteger(retryAfter) || retryAfter < 0) {
      throw new LocalServiceArgumentError("setUnavailable: failures must be > 0 and retryAfter a whole number of seconds >= 0.");
    }
    this.fault = { left, retryAfter };
  }

  /** Consumes one injected failure; returns its Retry-After seconds, or undefined when healthy. */
  takeFault(): number | undefined {
    const f = this.fault;
    if (!f) return undefined;
    if (--f.left <= 0) this.fault = undefined;
    return f.retryAfter;
  }

  exportState(): Promise<LocalState> {
    return exportState(this.store);
  }

  /** Notes a verification event (OpContext.record). */
  readonly record = (event: VerificationEvent): void => this.events.record(event);

  /** Counts an outcome of ratelimit.limit (OpContext.countLimit). */
  readonly countLimit = (workspaceId: string, namespaceId: string, time: number, passed: boolean): void =>
    this.events.countLimit(workspaceId, namespaceId, time, passed);

  /** What analytics.getVerifications runs on (OpContext.analytics). */
  get analytics(): OpContext["analytics"] {
    return {
      retentionMs: this.config.verificationRetentionMs,
      query: (plan, scope) => this.store.queryVerifications(plan, scope),
      ratelimitCounts: (query) => this.store.ratelimitCounts(query),
    };
  }

  /** What the webhooks operations see (OpContext.webhooks). */
  get webhookContext(): OpContext["webhooks"] {
    return {
      allowPrivate: this.config.webhooksAllowPrivate,
      messages: (query) => this.store.listWebhooks(query),
      message: (messageId) => this.store.getWebhook(messageId),
      resend: async (message) => {
        const now = this.config.now();
        const again: WebhookMessage = { ...message, status: "pending", nextAttemptAt: now, resentAt: now };
        await this.store.settleWebhook(again);
        void this.webhooks.tick();
        return again;
      },
      deliverSoon: () => void this.webhooks.tick(),
      chargeWithEvents: this.chargeWithEvents,
    };
  }

  /** OpContext.webhooks.chargeWithEvents: the charge and its events' messages in one transaction, then a delivery pass. */
  private readonly chargeWithEvents: OpContext["webhooks"]["chargeWithEvents"] = async (keyId, cost, now, refill, events) => {
    let sent = 0;
    const spent = await this.store.transaction(async (tx) => {
      const outcome = await tx.spendCredits(keyId, cost, now, refill);
      if (outcome?.ok) sent = await enqueueNoticed(tx, events(outcome));
      return outcome;
    });
    if (sent > 0) void this.webhooks.tick();
    return spent;
  };

  flushVerifications(): Promise<void> {
    return this.events.flush();
  }

  /** Stops the timers and writes the events still buffered (before the store closes). */
  async close(): Promise<void> {
    this.draining = true;
    await Promise.all([this.events.close(), this.auditRetention.close(), this.webhooks.close()]);
  }

  private async workspace(tx: StorageTx, id: string | undefined): Promise<string> {
    const workspaceId = id ?? this.workspaceId;
    if (!(await tx.get("workspaces", workspaceId))) {
      throw new LocalServiceArgumentError(`keyguard/server: unknown workspace ${JSON.stringify(id)}. Use an id from createWorkspace().`);
    }
    return workspaceId;
  }
}
