// The two Redis connections of `redisStore()`: one for commands, one subscribed to the
// invalidations. From a URL (one server over TCP or TLS, or a Redis Cluster) or from the caller's
// ioredis client (`Redis` or `Cluster`). On a cluster the subscriber is a connection of its own
// to one node, moved to another node when it ends, and it says "ready" each time it is subscribed
// again, as a single server's subscriber does after a reconnect (the store then forgets its memory
// tier, since it may have missed invalidations meanwhile).
import { EventEmitter } from "node:events";
import type * as IoredisModule from "ioredis";
import type { OptionChecks } from "../option-checks";
import { parseRedisTarget, redisConnection, type NodeSettings } from "../redis-connection";

/** The part of an ioredis client (`Redis`) this store uses (ioredis 5 and 6). */
export interface RedisClientLike {
  duplicate(override?: Record<string, unknown>): unknown;
}

/** The part of an ioredis `Cluster` this store uses. */
export interface RedisClusterLike {
  readonly isCluster: boolean;
  duplicate(startupNodes?: never[], options?: Record<string, unknown>): unknown;
}

/** One connection as the store uses it (a `Redis`, a `Cluster` or the cluster's subscriber). */
export interface RedisConnection {
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
  readonly status: string;
}

interface ClusterConnection extends RedisConnection {
  nodes(role?: "all" | "master" | "slave"): Array<{ duplicate(override?: Record<string, unknown>): RedisConnection }>;
}

/** The options that say where Redis is. */
export interface ConnectionOptions {
  client?: RedisClientLike | RedisClusterLike;
  url?: string;
  caFile?: string;
  cluster?: boolean;
}

const COMMANDS = { enableOfflineQueue: false, lazyConnect: false } as const;
/** The subscriber subscribes again itself after a reconnect (see redis-store.ts). */
const SUBSCRIBER = { enableOfflineQueue: true, lazyConnect: false, autoResubscribe: false } as const;

/** The store's connections, and whether they are on a cluster (then every key must be in one slot). */
export async function openConnections(
  check: OptionChecks,
  options: ConnectionOptions,
  timeout: number,
): Promise<{ commands: RedisConnection; subscriber: RedisConnection; cluster: boolean }> {
  const perNode = { commandTimeout: timeout, maxRetriesPerRequest: 0 };
  const client = options.client;
  if (client !== undefined) {
    check.withMethods("client", client, ["duplicate"], "Pass an ioredis client (new Redis(...) or new Cluster(...)).");
    for (const name of ["url", "caFile", "cluster"] as const) {
      if (options[name] !== undefined) check.fail(name, `pass either client or ${name}, not both (the client says how to connect).`);
    }
    if ((client as { isCluster?: unknown }).isCluster === true) {
      const commands = (client as RedisClusterLike).duplicate([], COMMANDS) as ClusterConnection;
      return { commands, subscriber: clusterSubscriber(commands), cluster: true };
    }
    const single = client as RedisClientLike;
    return {
      commands: single.duplicate({ ...COMMANDS, ...perNode }) as RedisConnection,
      subscriber: single.duplicate({ ...SUBSCRIBER, commandTimeout: undefined, maxRetriesPerRequest: null }) as RedisConnection,
      cluster: false,
    };
  }
  if (options.url === undefined) return check.fail("url", "pass { url } (e.g. redis://127.0.0.1:6379) or { client } (an ioredis client).");
  const { url, caFile, cluster } = options;
  const target = parseRedisTarget(check, { url: "url", caFile: "caFile", cluster: "cluster" }, { url, caFile, cluster });
  let ioredis: typeof IoredisModule;
  try {
    ioredis = await import("ioredis");
  } catch {
    return check.fail("url", "keyguard/redis needs the ioredis package: npm install ioredis (or pass { client }).");
  }
  const node: NodeSettings = { ...perNode };
  if (target.cluster) {
    const commands = redisConnection(ioredis, target, { ...node, ...COMMANDS }, { slotsRefreshInterval: 2000 });
    return { commands: commands as unknown as ClusterConnection, subscriber: clusterSubscriber(commands as never), cluster: true };
  }
  return {
    commands: redisConnection(ioredis, target, { ...node, ...COMMANDS }) as unknown as RedisConnection,
    subscriber: redisConnection(ioredis, target, {
      ...SUBSCRIBER,
      maxRetriesPerRequest: null,
    }) as unknown as RedisConnection,
    cluster: false,
  };
}

function clusterSubscriber(cluster: ClusterConnection): RedisConnection {
  return new ClusterSubscriber(cluster) as unknown as RedisConnection;
}

/**
 * A subscriber on one node of a cluster (classic pub/sub reaches every node), moved to the next
 * node the cluster knows when its connection ends.
 */
class ClusterSubscriber extends EventEmitter {
  status = "connecting";
  private current: RedisConnection | undefined;
  private readonly channels = new Set<string>();
  private turn = 0;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly cluster: ClusterConnection) {
    super();
    if (cluster.status === "ready") this.hop(0);
    else (cluster as unknown as EventEmitter).once("ready", () => this.hop(0));
  }

  private hop(attempt: number): void {
    if (this.closed) return;
    const nodes = this.cluster.nodes("all");
    if (nodes.length === 0) {
      this.timer = setTimeout(() => this.hop(attempt + 1), Math.min(100 * (attempt + 1), 1000));
      return;
    }
    const conn = nodes[this.turn++ % nodes.length]!.duplicate({
      lazyConnect: false,
      enableOfflineQueue: true,
      retryStrategy: null,
      commandTimeout: undefined,
      maxRetriesPerRequest: null,
    });
    this.current = conn;
    conn.on("error", (err: never) => this.emit("error", err));
    conn.on("message", (channel: never, text: never) => this.emit("message", channel, text));
    conn.on("end", () => {
      if (this.current !== conn || this.closed) return;
      this.status = "reconnecting";
      this.timer = setTimeout(() => this.hop(attempt + 1), Math.min(50 * (attempt + 1), 1000));
    });
    conn.on("ready", () => {
      const again = this.channels.size === 0 ? Promise.resolve() : Promise.all([...this.channels].map((c) => conn.subscribe(c)));
      again.then(
        () => {
          if (this.current !== conn || this.closed) return;
          attempt = 0;
          this.status = "ready";
          this.emit("ready");
        },
        () => conn.disconnect(),
      );
    });
  }

  subscribe(channel: string): Promise<unknown> {
    this.channels.add(channel);
    if (this.status === "ready" && this.current) return this.current.subscribe(channel);
    return new Promise((resolve) => this.once("ready", resolve));
  }

  eval(): Promise<unknown> {
    return Promise.reject(new Error("a subscriber runs no commands"));
  }

  async quit(): Promise<unknown> {
    this.disconnect();
    return "OK";
  }

  disconnect(): void {
    this.closed = true;
    this.status = "end";
    clearTimeout(this.timer);
    this.current?.disconnect();
  }
}
