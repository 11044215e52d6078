// The local service's state: plain JSON-serialisable records plus in-memory hash indexes.
// Every mutation goes through `touch()` so the persistence layer knows what to write.
import type { CreditsRefill, Meta } from "../protocol/types";
import { dropOwnedCounters } from "./ratelimit";

export interface WorkspaceRecord {
  id: string;
  name: string;
  createdAt: number;
}

export interface RootKeyRecord {
  id: string;
  workspaceId: string;
  /** base64(SHA-256(root key)). */
  hash: string;
  permissions: string[];
  createdAt: number;
}

export interface ApiRecord {
  id: string;
  workspaceId: string;
  name: string;
  createdAt: number;
  /** Source addresses allowed to verify this API's keys; others get FORBIDDEN. Admin surface only. */
  ipWhitelist?: string[];
}

export interface RatelimitRecord {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
}

export interface CreditsRecord {
  remaining: number;
  refill?: CreditsRefill;
  /** Unix ms of the last refill (or of creation): the next refill is the first boundary after it. */
  lastRefillAt: number;
}

export interface KeyRecord {
  id: string;
  workspaceId: string;
  apiId: string;
  /** base64(SHA-256(key)). */
  hash: string;
  start: string;
  prefix?: string;
  byteLength: number;
  name?: string;
  meta?: Meta;
  createdAt: number;
  updatedAt?: number;
  expires?: number;
  enabled: boolean;
  identityId?: string;
  permissionIds: string[];
  roleIds: string[];
  /** Absent: unlimited. */
  credits?: CreditsRecord;
  ratelimits: RatelimitRecord[];
}

export interface PermissionRecord {
  id: string;
  workspaceId: string;
  name: string;
  slug: string;
  description?: string;
  createdAt: number;
}

export interface RoleRecord {
  id: string;
  workspaceId: string;
  name: string;
  description?: string;
  permissionIds: string[];
  createdAt: number;
}

export interface IdentityRecord {
  id: string;
  workspaceId: string;
  externalId: string;
  meta?: Meta;
  ratelimits: RatelimitRecord[];
  createdAt: number;
}

/** Counters of one sliding-window rate limit, keyed by limit id and window length. */
export interface WindowRecord {
  duration: number;
  /** floor(now / duration) of the current window. */
  window: number;
  current: number;
  previous: number;
  /** Key or identity whose limit this counts; absent for `ratelimit.limit` counters. */
  owner?: string;
}

export interface LocalState {
  version: 1;
  /** What `startLocalKeyService` created first; reused on restart with the same data file. */
  bootstrap?: { workspaceId: string; apiId: string };
  workspaces: Record<string, WorkspaceRecord>;
  rootKeys: Record<string, RootKeyRecord>;
  apis: Record<string, ApiRecord>;
  keys: Record<string, KeyRecord>;
  permissions: Record<string, PermissionRecord>;
  roles: Record<string, RoleRecord>;
  identities: Record<string, IdentityRecord>;
  windows: Record<string, WindowRecord>;
}

export function emptyState(): LocalState {
  return {
    version: 1,
    workspaces: {},
    rootKeys: {},
    apis: {},
    keys: {},
    permissions: {},
    roles: {},
    identities: {},
    windows: {},
  };
}

/** A record of a table by id; safe for any string (no prototype lookups). */
export function getRecord<T>(table: Record<string, T>, id: string): T | undefined {
  return Object.hasOwn(table, id) ? table[id] : undefined;
}

/** Records of one workspace, ordered by id (creation order). */
export function inWorkspace<T extends { id: string; workspaceId: string }>(
  table: Record<string, T>,
  workspaceId: string,
): T[] {
  return Object.values(table)
    .filter((r) => r.workspaceId === workspaceId)
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export class Store {
  /** True when the state changed since the last `clean()`. */
  dirty = false;
  private current: LocalState;
  private readonly keyByHash = new Map<string, string>();
  private readonly rootKeyByHash = new Map<string, string>();

  constructor(state: LocalState = emptyState()) {
    this.current = state;
    this.index();
  }

  get state(): LocalState {
    return this.current;
  }

  /** Replaces the whole state (rolling back to a saved copy) and rebuilds the indexes. */
  replace(state: LocalState): void {
    this.current = state;
    this.index();
  }

  private index(): void {
    this.keyByHash.clear();
    this.rootKeyByHash.clear();
    for (const k of Object.values(this.current.keys)) this.keyByHash.set(k.hash, k.id);
    for (const r of Object.values(this.current.rootKeys)) this.rootKeyByHash.set(r.hash, r.id);
  }

  touch(): void {
    this.dirty = true;
  }

  clean(): void {
    this.dirty = false;
  }

  keyByHashValue(hash: string): KeyRecord | undefined {
    const id = this.keyByHash.get(hash);
    return id === undefined ? undefined : getRecord(this.state.keys, id);
  }

  rootKeyByHashValue(hash: string): RootKeyRecord | undefined {
    const id = this.rootKeyByHash.get(hash);
    return id === undefined ? undefined : getRecord(this.state.rootKeys, id);
  }

  putKey(key: KeyRecord): void {
    this.state.keys[key.id] = key;
    this.keyByHash.set(key.hash, key.id);
    this.touch();
  }

  deleteKey(id: string): void {
    const key = getRecord(this.state.keys, id);
    if (!key) return;
    this.keyByHash.delete(key.hash);
    delete this.state.keys[id];
    dropOwnedCounters(this.state.windows, id);
    this.touch();
  }

  putRootKey(rootKey: RootKeyRecord): void {
    this.state.rootKeys[rootKey.id] = rootKey;
    this.rootKeyByHash.set(rootKey.hash, rootKey.id);
    this.touch();
  }

  /** A deep copy of the state (what the data file holds). */
  snapshot(): LocalState {
    return structuredClone(this.state);
  }
}
