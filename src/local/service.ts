// The local key service's core: the state, the bootstrap (workspace, API, root key), the
// in-process admin surface (not reachable over HTTP) and fault injection.
import { ALL_ROOT_PERMISSIONS, PERMISSION_TUPLE } from "./auth";
import { newId } from "./ids";
import { generateKey, hashKey } from "./key-material";
import { LocalServiceConfigError, type LocalServiceConfig } from "./options";
import { loadState, saveState } from "./persistence";
import { Store, getRecord, type ApiRecord, type LocalState } from "./store";

export interface UnavailableOptions {
  /** Fail only the next N requests, then recover. Default: every request until turned off. */
  failures?: number;
  /** Seconds sent in `Retry-After`. Default: 1. */
  retryAfter?: number;
}

/** The admin surface of a running local key service. */
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

export class ServiceCore implements LocalKeyService {
  readonly store: Store;
  readonly config: LocalServiceConfig;
  readonly workspaceId: string;
  readonly apiId: string;
  readonly rootKey: string;
  readonly rootKeyGenerated: boolean;
  readonly restored: boolean;
  private fault: { left: number; retryAfter: number } | undefined;
  /** False during the bootstrap, which is written once at its end. */
  private ready = false;

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
    state.bootstrap = { workspaceId, apiId };
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
    this.ready = true;
    this.store.touch();
    this.persist();
  }

  now(): number {
    return this.config.now();
  }

  createWorkspace(input: { name?: string } = {}): { workspaceId: string } {
    const id = newId("ws");
    this.store.state.workspaces[id] = { id, name: input.name ?? "workspace", createdAt: this.now() };
    this.changed();
    return { workspaceId: id };
  }

  createApi(input: { workspaceId?: string; name: string; ipWhitelist?: string[] }): { apiId: string } {
    const workspaceId = this.workspace(input.workspaceId);
    if (typeof input.name !== "string" || input.name === "") throw new LocalServiceConfigError("createApi: name must be a non-empty string.");
    const ips = input.ipWhitelist;
    if (ips !== undefined && (!Array.isArray(ips) || ips.some((ip) => typeof ip !== "string" || ip === ""))) {
      throw new LocalServiceConfigError('createApi: ipWhitelist must be an array of addresses, e.g. ["127.0.0.1"].');
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
      throw new LocalServiceConfigError(
        `createRootKey: invalid permission ${JSON.stringify(bad)}. Use tuples like "api.*.verify_key" or "rbac.*.create_permission".`,
      );
    }
    const { key, hash } = generateKey("root", 24);
    this.store.putRootKey({ id: newId("rk"), workspaceId, hash, permissions: [...input.permissions], createdAt: this.now() });
    this.persist();
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
      throw new LocalServiceConfigError("setUnavailable: failures must be > 0 and retryAfter a whole number of seconds >= 0.");
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

  /** Writes the state to the data file if it changed. Throws when the write fails. */
  persist(): void {
    if (!this.store.dirty) return;
    if (this.config.dataFile) saveState(this.config.dataFile, this.store.state);
    this.store.clean();
  }

  private changed(): void {
    this.store.touch();
    if (this.ready) this.persist();
  }

  private workspace(id: string | undefined): string {
    const workspaceId = id ?? this.workspaceId ?? this.store.state.bootstrap?.workspaceId;
    if (!workspaceId || !getRecord(this.store.state.workspaces, workspaceId)) {
      throw new LocalServiceConfigError(`keyguard/local: unknown workspace ${JSON.stringify(id)}. Use an id from createWorkspace().`);
    }
    return workspaceId;
  }
}
