// The PostgreSQL store's cache of records that change rarely (root keys, APIs, permissions, roles;
// with `cacheKeys`, the default, keys and identities too), read outside transactions only (`Storage.direct`:
// root-key authentication, keys.verifyKey), and of meta values read with `cached` (a workspace's
// webhook endpoints, as every audited call reads them). A write to any of these, through any
// instance, empties every instance's cache: locally once the write committed, elsewhere through a
// Redis channel of the store's prefix (`<prefix>records`, and `:<db>` after it on a database other than 0), before the writing request is answered.
// Only records found are kept (a record created needs no message: a new key, the most frequent
// write, sends none), and meta values found or not (each write of one sends a message); a read
// that began before an emptying is not kept; entries expire after the TTL;
// while the subscription is down nothing is kept and nothing is served from the cache. A key with
// credits is kept only by its hash (keys.verifyKey's lookup, which charges in PostgreSQL and takes
// the balance from the charge); read by its id it is never kept, so its balance is as stored.
import { randomUUID } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import type { TableName } from "../../records";
import { copy } from "../memory/tx";
import { redisChannel } from "../../../protocol/invalidation-message";

/** The tables whose records may be kept. */
export type CachedTable = "rootKeys" | "apis" | "permissions" | "roles" | "keys" | "identities";

/** What an entry is: a record of a cached table, or a meta value (`StorageTx.getMeta`). */
export type CachedKind = CachedTable | "meta";

const ALWAYS: ReadonlySet<TableName> = new Set<TableName>(["rootKeys", "apis", "permissions", "roles"]);

/** The tables kept besides with `cacheKeys`: what keys.verifyKey reads of a key (its identity's rate limits). */
const WITH_KEYS: ReadonlySet<TableName> = new Set<TableName>(["keys", "identities"]);

interface Entry {
  record: unknown;
  expires: number;
}

/** What a cache is tuned with (`postgresStorage` options `recordCacheTtlMs`, `recordCacheSize`). */
export interface RecordCacheSettings {
  /** How long an entry is kept, ms; 0 turns the cache off. */
  ttlMs: number;
  /** Most entries kept; the oldest goes first. */
  size: number;
  /** Keys and identities are kept too (`postgresStorage` option `cacheKeys`). */
  keys: boolean;
}

export class RecordCache {
  private readonly entries = new Map<string, Entry>();
  /** Moves on every emptying: a read that began under an older generation is not kept. */
  private generation = 0;
  private listening = false;
  private readonly origin = randomUUID();
  private readonly channel: string;

  constructor(
    private readonly settings: RecordCacheSettings,
    /** The connection subscribed to the channel (none: the cache is off). */
    private readonly subscriber: Redis | Cluster | undefined,
    /** The connection the emptyings are published on. */
    private readonly publisher: Redis | Cluster,
    prefix: string,
    /** The Redis database: pub/sub ignores it, so the channel's name carries it. */
    db = 0,
  ) {
    this.channel = redisChannel(prefix, "records", db);
  }

  /** Whether this cache keeps records of `table` (whether it is on or not). */
  holds(table: TableName): table is CachedTable {
    return ALWAYS.has(table) || (this.settings.keys && WITH_KEYS.has(table));
  }

  /**
   * Whether a write to `table` is announced: to any table an instance may keep, keys and identities
   * included even where `cacheKeys` is off, so that instances of one fleet configured apart still
   * hear of every change to what they keep.
   */
  announces(table: TableName): boolean {
    return ALWAYS.has(table) || WITH_KEYS.has(table);
  }

  /** Subscribes to the channel; from then on (and while subscribed) the cache serves. */
  async start(): Promise<void> {
    const sub = this.subscriber;
    if (!sub || this.settings.ttlMs === 0) return;
    sub.on("message", (channel: string, message: string) => {
      if (channel === this.channel && message !== this.origin) this.clear();
    });
    // Messages sent while the connection is down are lost: nothing is served until it is back,
    // subscribed again, and the cache emptied.
    sub.on("close", () => {
      this.listening = false;
      this.clear();
    });
    sub.on("ready", () => {
      sub.subscribe(this.channel).then(
        () => {
          this.clear();
          this.listening = true;
        },
        () => undefined,
      );
    });
    await sub.connect();
    await sub.subscribe(this.channel);
    this.listening = true;
  }

  /**
   * The record of `table` under `id` (an id, `#` and a hash, or a meta value's name): from the cache when kept, else
   * read by `load` (and kept when found and `keep` allows it, unless an emptying happened
   * meanwhile). The caller gets a copy of its own.
   */
  async read<R>(table: CachedKind, id: string, load: () => Promise<R | undefined>, keep?: (record: R) => boolean): Promise<R | undefined> {
    if (!this.listening) return load();
    const name = `${table}\0${id}`;
    const now = Date.now();
    const hit = this.entries.get(name);
    if (hit !== undefined && hit.expires > now) return copy(hit.record) as R;
    const generation = this.generation;
    const record = await load();
    if (record !== undefined && generation === this.generation && this.listening && (keep === undefined || keep(record))) {
      this.entries.delete(name);
      if (this.entries.size >= this.settings.size) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(name, { record: copy(record), expires: now + this.settings.ttlMs });
    }
    return record;
  }

  /**
   * A cached table was written: empties this instance's cache and tells the others, resolving
   * once told. A failure to tell is not thrown (the write is kept); the others' entries expire
   * within the TTL.
   */
  async changed(): Promise<void> {
    this.clear();
    if (!this.subscriber || this.settings.ttlMs === 0) return;
    await this.publisher.publish(this.channel, this.origin).catch(() => undefined);
  }

  private clear(): void {
    this.generation++;
    this.entries.clear();
  }

  close(): void {
    this.listening = false;
    this.subscriber?.disconnect();
  }
}
