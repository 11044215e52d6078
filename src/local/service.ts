// The local key service's core: the state, the bootstrap (workspace, API, root key), the
// in-process admin surface (not reachable over HTTP) and fault injection.
import { ALL_ROOT_PERMISSIONS, PERMISSION_TUPLE } from "./auth";
import { newId } from "./ids";
import { generateKey, hashKey } from "./key-material";
import { LocalServiceArgumentError } from "./argument-error";
import { LocalServiceConfigError, type LocalServiceConfig } from "./options";
import { loadState, saveState } from "./persistence";
import { pruneWindows } from "./ratelimit";
import { Store, getRecord, type ApiRecord, type LocalState } from "./store";

export interface UnavailableOptions {
  /** Fail only the next N requests, then recover. Default: every request until turned off. */
  failures?: number;
  /** Seconds sent in `Retry-After`. Default: 1. */
  retryAfter?: number;
}

/**
 * The admin surface of a running local key service. Bad arguments throw
 * `LocalServiceArgumentError`; with a data file, a change that cannot be written throws the write
 * error and is not kept.
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
  /** Whether the state was loaded from an existing `dataFile`. */
  readonly restored: boolean;
  createWorkspace(input?: { name?: string }): { workspaceId: string };
  /** `ipWhitelist`: source addresses allowed to verify this API's keys; others get FORBIDDEN. */
  createApi(input: { workspaceId?: string; name: string; ipWhitelist?: string[] }): { apiId: string };
  /** `permissions`: tuples such as `api.*.verify_key` or `api.<apiId>.create_key`. */
  createRootKey(input: { workspaceId?: string; permissions: readonly string[] }): { rootKey: string };
  /** Answer 503 `service_unavailable` (with `Retry-After`) to every request, or to the next N. */
  setUnavailable(on: boolean | UnavailableOptions): void;
  /** A deep copy of the state, as the data file holds it (hashes only, never a key). */
  snapshot(): LocalState;
  /** The service clock. */
  now(): number;
}

/** How often (in service-clock ms) counters of ended rate-limit windows are dropped. */
const PRUNE_EVERY_MS = 60_000;

export class ServiceCore implements LocalKeyService {
  readonly store: Store;
  readonly config: LocalServiceConfig;
  readonly workspaceId: string;
  readonly apiId: string;
  readonly rootKey: string;
  readonly rootKeyGenerated: boolean;
  readonly restored: boolean;
  private fault: { left: number; retryAfter: number } | undefined;
  /** False during the bootstrap, whose changes are written by `persist()` once the service is up. */
  private ready = false;
  /** JSON of the last committed state (data file only): what a failed save rolls back to. */
  private committed: string | undefined;
  /** Whether `committed` is what the data file holds (false until the bootstrap is written). */
  private committedSaved = false;
  private lastPrune = -Infinity;

  constructor(config: LocalServiceConfig) {
    this.config = config;
    const loaded = config.dataFile ? loadState(config.dataFile) : undefined;
    this.restored = loaded !== undefined;
    this.store = new Store(loaded);
    const { state } = this.store;
    const t = config.now();
    let workspaceId = state.bootstrap?.workspaceId;
    if (!workspaceId || !getRecord(state.workspaces, workspaceId)) {
      workspaceId = this.createWorkspace({ name: "default" }).workspaceId;
    }
    let apiId = state.bootstrap?.apiId;
    if (!apiId || !getRecord(state.apis, apiId)) apiId = this.createApi({ workspaceId, name: "default" }).apiId;
    if (state.bootstrap?.workspaceId !== workspaceId || state.bootstrap.apiId !== apiId) {
      state.bootstrap = { workspaceId, apiId };
      this.store.touch();
    }
    this.workspaceId = workspaceId;
    this.apiId = apiId;
    this.rootKeyGenerated = config.rootKey === undefined;
    const rootKey = config.rootKey ?? generateKey("root", 24).key;
    if (!this.store.rootKeyByHashValue(hashKey(rootKey))) {
      this.store.putRootKey({
        id: newId("rk"),
        workspaceId,
        hash: hashKey(rootKey),
        permissions: [...ALL_ROOT_PERMISSIONS],
        createdAt: t,
      });
    }
    this.rootKey = rootKey;
    // Nothing is written here: a start that fails (say, the port is taken) leaves the file alone.
    if (config.dataFile) this.committed = JSON.stringify(state);
    this.committedSaved = !this.store.dirty;
    this.ready = true;
  }

  now(): number {
    return this.config.now();
  }

  createWorkspace(input: { name?: string } = {}): { workspaceId: string } {
    if (input.name !== undefined && (typeof input.name !== "string" || input.name === "")) {
      throw new LocalServiceArgumentError("createWorkspace: name must be a non-empty string when given.");
    }
    const id = newId("ws");
    this.store.state.workspaces[id] = { id, name: input.name ?? "workspace", createdAt: this.now() };
    this.changed();
    return { workspaceId: id };
  }

  createApi(input: { workspaceId?: string; name: string; ipWhitelist?: string[] }): { apiId: string } {
    const workspaceId = this.workspace(input.workspaceId);
    if (typeof input.name !== "string" || input.name === "") {
      throw new LocalServiceArgumentError("createApi: name must be a non-empty string.");
    }
    const ips = input.ipWhitelist;
    if (ips !== undefined && (!Array.isArray(ips) || ips.some((ip) => typeof ip !== "string" || ip === ""))) {
      throw new LocalServiceArgumentError('createApi: ipWhitelist must be an array of addresses, e.g. ["127.0.0.1"].');
    }
    const id = newId("api");
    const api: ApiRecord = { id, workspaceId, name: input.name, createdAt: this.now() };
    if (ips) api.ipWhitelist = [...ips];
    this.store.state.apis[id] = api;
    this.changed();
    return { apiId: id };
  }

  createRootKey(input: { workspaceId?: string; permissions: readonly string[] }): { rootKey: string } {
    const workspaceId = this.workspace(input.workspaceId);
    const bad = (input.permissions ?? []).find((p) => typeof p !== "string" || !PERMISSION_TUPLE.test(p));
    if (!Array.isArray(input.permissions) || bad !== undefined) {
      throw new LocalServiceArgumentError(
        `createRootKey: invalid permission ${JSON.stringify(bad)}. Use tuples like "api.*.verify_key" or "rbac.*.create_permission".`,
      );
    }
    const { key, hash } = generateKey("root", 24);
    this.store.putRootKey({ id: newId("rk"), workspaceId, hash, permissions: [...input.permissions], createdAt: this.now() });
    this.changed();
    return { rootKey: key };
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

  snapshot(): LocalState {
    return this.store.snapshot();
  }

  /**
   * Commits the changes: writes the state to the data file if it changed. When the write fails,
   * the state goes back to the last committed one (nothing of the failed change is kept) and the
   * error is thrown.
   */
  persist(): void {
    if (!this.store.dirty) return;
    const file = this.config.dataFile;
    if (file) {
      let text: string;
      try {
        text = JSON.stringify(this.store.state);
        saveState(file, text);
      } catch (err) {
        this.rollback();
        throw err;
      }
      this.committed = text;
      this.committedSaved = true;
    }
    this.store.clean();
  }

  /**
   * Undoes every change since the last commit. Only with a data file: a service in memory keeps
   * no copy to return to (its operations check everything before changing anything).
   */
  rollback(): void {
    if (this.committed === undefined) return;
    this.store.replace(JSON.parse(this.committed) as LocalState);
    if (this.committedSaved) this.store.clean();
    else this.store.touch();
  }

  /** Writes the bootstrap once the service is up. A data file that cannot be written is a config error. */
  commitBootstrap(): void {
    try {
      this.persist();
    } catch (err) {
      throw new LocalServiceConfigError(
        `keyguard/local: cannot write dataFile ${JSON.stringify(this.config.dataFile)}: ${(err as Error).message}. ` +
          "Check that its directory exists and is writable.",
      );
    }
  }

  /** Drops counters of rate-limit windows that ended, at most once per minute of service time. */
  prune(now: number): void {
    if (now >= this.lastPrune && now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    if (pruneWindows(this.store.state.windows, now) > 0) this.store.touch();
  }

  private changed(): void {
    this.store.touch();
    if (this.ready) this.persist();
  }

  private workspace(id: string | undefined): string {
    const workspaceId = id ?? this.workspaceId ?? this.store.state.bootstrap?.workspaceId;
    if (!workspaceId || !getRecord(this.store.state.workspaces, workspaceId)) {
      throw new LocalServiceArgumentError(`keyguard/local: unknown workspace ${JSON.stringify(id)}. Use an id from createWorkspace().`);
    }
    return workspaceId;
  }
}
