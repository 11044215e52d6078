// Redis as it is deployed, for the service's rate-limit counters and for keyguard/redis: one server
// over TCP (`redis://`) or TLS (`rediss://`, trusting the CA certificates of a file besides Node's
// own), or a Redis Cluster seeded by one node's URL. The options are checked once here; the
// connections are made by the caller's ioredis with the caller's own settings.
import { readFileSync } from "node:fs";
import type * as IoredisModule from "ioredis";
import type { Cluster, ClusterOptions, Redis, RedisOptions } from "ioredis";
import { HIDDEN, type OptionChecks } from "./option-checks";

/** Where the Redis is and how to reach it, checked. */
export interface RedisTarget {
  /** The URL as given (it may hold a password: never shown). */
  readonly url: string;
  /** `host:port`, for messages. */
  readonly where: string;
  /** PEM of the CA certificates trusted for a `rediss://` server (from the CA file); undefined: Node's own. */
  readonly ca: string | undefined;
  /** A Redis Cluster: the URL names one of its nodes. */
  readonly cluster: boolean;
}

/** How a caller names the three options in its messages (`redis`, `redisCaFile`, `redisCluster`). */
export interface RedisOptionNames {
  readonly url: string;
  readonly caFile: string;
  readonly cluster: string;
}

/**
 * Checks a Redis URL, its CA file (read now: a missing or unreadable file, or one without a
 * certificate, is refused here, not at the first connection) and the cluster switch.
 */
export function parseRedisTarget(
  check: OptionChecks,
  names: RedisOptionNames,
  given: { url: unknown; caFile?: unknown; cluster?: unknown },
): RedisTarget {
  const url = check.url(names.url, given.url, { protocols: ["redis:", "rediss:"], example: "redis://127.0.0.1:6379" });
  const cluster = check.boolean(names.cluster, given.cluster, false);
  if (cluster && url.pathname !== "" && url.pathname !== "/" && url.pathname !== "/0") {
    check.invalid(names.url, HIDDEN, `A Redis Cluster has database 0 only: take the /<db> out of the URL, or drop ${names.cluster}.`);
  }
  let ca: string | undefined;
  if (given.caFile !== undefined) {
    const file = check.string(names.caFile, given.caFile, { pattern: /\S/, fix: "Pass the path of a PEM file of CA certificates." });
    if (url.protocol !== "rediss:") {
      check.invalid(names.caFile, file, `It applies to TLS only: use a rediss:// URL in ${names.url}, or drop ${names.caFile}.`);
    }
    try {
      ca = readFileSync(file, "utf8");
    } catch (err) {
      check.invalid(
        names.caFile,
        file,
        `The file cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"}); pass a readable PEM file.`,
      );
    }
    if (!ca.includes("-----BEGIN CERTIFICATE-----")) {
      check.invalid(
        names.caFile,
        file,
        "It holds no PEM certificate (-----BEGIN CERTIFICATE-----); pass the CA certificate of your Redis.",
      );
    }
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1") || "127.0.0.1";
  return Object.freeze({ url: url.href, where: `${host}:${url.port || 6379}`, ca, cluster });
}

/** The start of Redis keys that all hash to one Cluster slot: the prefix when it has a `{tag}`, else the prefix in braces. */
export function slotPrefix(prefix: string): string {
  const open = prefix.indexOf("{");
  const close = open < 0 ? -1 : prefix.indexOf("}", open + 1);
  return close > open + 1 ? prefix : `{${prefix}}`;
}

/** Settings of one connection, for a single server or for each node of a cluster. */
export type NodeSettings = Omit<RedisOptions, "host" | "port" | "path" | "tls" | "username" | "password" | "db">;

/**
 * A connection to the target: an ioredis `Redis`, or a `Cluster` whose nodes take `node` (and the
 * URL's credentials and TLS) and which takes `cluster` itself. `lazyConnect` and
 * `enableOfflineQueue` are given to both.
 */
export function redisConnection(
  ioredis: typeof IoredisModule,
  target: RedisTarget,
  node: NodeSettings,
  cluster: Omit<ClusterOptions, "redisOptions" | "lazyConnect" | "enableOfflineQueue"> = {},
): Redis | Cluster {
  const url = new URL(target.url);
  const tls = url.protocol === "rediss:" ? (target.ca === undefined ? {} : { ca: target.ca }) : undefined;
  const mod = ioredis as unknown as { Redis?: typeof Redis; Cluster?: typeof Cluster; default?: typeof Redis };
  if (!target.cluster) {
    const RedisClass = mod.Redis ?? mod.default!;
    return new RedisClass(target.url, { ...node, ...(tls && { tls }) });
  }
  const [host, port] = [url.hostname.replace(/^\[(.*)\]$/, "$1"), Number(url.port || 6379)];
  const { lazyConnect, enableOfflineQueue, ...perNode } = node;
  return new mod.Cluster!([{ host, port }], {
    ...cluster,
    ...(lazyConnect !== undefined && { lazyConnect }),
    ...(enableOfflineQueue !== undefined && { enableOfflineQueue }),
    redisOptions: {
      ...perNode,
      ...(url.username !== "" && { username: decodeURIComponent(url.username) }),
      ...(url.password !== "" && { password: decodeURIComponent(url.password) }),
      ...(tls && { tls }),
    },
    // With TLS, connect to the addresses the nodes announce by name as given (certificates name them).
    ...(tls && { dnsLookup: (address: string, callback: (err: null, address: string) => void) => callback(null, address) }),
  });
}
