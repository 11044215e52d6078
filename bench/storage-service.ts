// Child process of the storage bench (bench/storage.ts): one local key service over one store
// (memory, SQLite or PostgreSQL + Redis), listening on a free loopback port. Driven over the IPC
// channel: `seed` fills the store with keys through the store itself (batched transactions),
// `stall` resets or reads the event-loop delay histogram, `size` answers the SQLite file's size.
// Sends `{ ready, url, rootKey, apiId, workspaceId }` first. Exits when the parent disconnects.

import { statSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { startLocalKeyService } from "keyguard/server";
import type { Storage, StorageTx } from "../src/server/storage/seam";
import type { KeyRecord } from "../src/server/records";
import { keyHash } from "../src/protocol/key-hash";
import { memoryStorage } from "../src/server/storage/memory/store";
import { postgresStorage } from "../src/server/storage/postgres/store";
import { sqliteStorage } from "../src/server/storage/sqlite/store";
import { overriding } from "../test/support/storage-wrapper";
import { benchKey, type ChildReply, type ChildRequest, type StoreConfig } from "./storage-keys";

async function openStore(config: StoreConfig): Promise<Storage> {
  if (config.backend === "memory") return memoryStorage();
  if (config.backend === "sqlite") return sqliteStorage(config.file);
  return postgresStorage({
    postgres: config.postgres,
    redis: config.redis,
    schema: config.schema,
    ...(config.recordCacheTtlMs === undefined ? {} : { recordCacheTtlMs: config.recordCacheTtlMs }),
    ...(config.cacheKeys === undefined ? {} : { cacheKeys: config.cacheKeys }),
    ...(config.optimisticWrites === undefined ? {} : { optimisticWrites: config.optimisticWrites }),
  });
}

/**
 * Storage calls since the last `stall` request: the wall time of the synchronous part of each
 * (from its start to the promise it returns: all of a SQLite call, whose driver is synchronous),
 * and the name of the longest. On a busy machine a call's wall time also counts waits for a core.
 */
const calls = { times: [] as number[], longestMs: 0, longest: "" };

/** Runs `call`, notes its synchronous part in `calls`, returns what it returned. */
function measureCall<T>(name: string, call: () => T): T {
  const t = performance.now();
  const out = call();
  const ms = performance.now() - t;
  calls.times.push(ms);
  if (ms > calls.longestMs) Object.assign(calls, { longestMs: ms, longest: name });
  return out;
}

/**
 * The calls of `tx`, each timed from its start to the promise it returns: the part that runs on
 * the event loop before the call yields (all of it for SQLite, whose driver is synchronous).
 */
function timed(tx: StorageTx): StorageTx {
  return new Proxy(tx, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]): unknown => measureCall(String(name), () => value.apply(target, args));
    },
  });
}

/** The store with every call of `direct` and of a transaction timed (see `timed`). */
function timedStore(store: Storage): Storage {
  return overriding(store, {
    direct: timed(store.direct),
    transaction: (fn, options) => measureCall("transaction", () => store.transaction((tx) => fn(timed(tx)), options)),
  });
}

const config = JSON.parse(process.env.BENCH_STORAGE ?? "{}") as StoreConfig & { rootKey: string };
const store = await openStore(config);
const service = await startLocalKeyService({ storage: timedStore(store), rootKey: config.rootKey, port: 0 });
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();

const record = (i: number, now: number): KeyRecord => {
  const key = benchKey(i);
  return {
    id: `key_bench${i.toString(36).padStart(8, "0")}`,
    workspaceId: service.workspaceId,
    apiId: service.apiId,
    hash: keyHash(key.key),
    start: key.key.slice(0, 8),
    byteLength: 16,
    createdAt: now,
    enabled: true,
    permissionIds: [],
    roleIds: [],
    ratelimits: [],
    ...(key.credits ? { credits: { remaining: 1_000_000_000, lastRefillAt: now } } : {}),
  };
};

/** Puts keys [from, to) in transactions of `batch`, `parallel` transactions at once. */
async function seed(from: number, to: number): Promise<void> {
  const batch = config.backend === "postgres" ? 500 : 5000;
  const parallel = config.backend === "postgres" ? 4 : 1;
  const now = Date.now();
  let next = from;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < to) {
        const start = next;
        next = Math.min(to, next + batch);
        const end = next;
        await store.transaction(async (tx) => {
          for (let i = start; i < end; i++) await tx.put("keys", record(i, now));
        });
      }
    }),
  );
}

/** The SQLite data file's size and its WAL's (bytes). */
function size(): { bytes: number | undefined; walBytes?: number } {
  if (config.backend !== "sqlite") return { bytes: undefined };
  const bytes = statSync(config.file).size;
  let walBytes = 0;
  try {
    walBytes = statSync(`${config.file}-wal`).size;
  } catch {
    // No WAL file right now.
  }
  return { bytes: bytes + walBytes, walBytes };
}

async function handle(request: ChildRequest): Promise<ChildReply> {
  switch (request.cmd) {
    case "seed": {
      const t = performance.now();
      await seed(request.from, request.to);
      return { cmd: "seed", ms: performance.now() - t };
    }
    case "stall": {
      const cpu = process.cpuUsage();
      const times = calls.times.sort((a, b) => a - b);
      const reply: ChildReply = {
        cmd: "stall",
        maxMs: delay.max / 1e6,
        count: times.length,
        overTen: times.filter((t) => t > 10).length,
        p999Ms: times[Math.floor(0.999 * times.length)] ?? 0,
        longestMs: calls.longestMs,
        longest: calls.longest,
        cpuMicros: cpu.user + cpu.system,
      };
      delay.reset();
      Object.assign(calls, { times: [], longestMs: 0, longest: "" });
      return reply;
    }
    case "size":
      return { cmd: "size", ...size() };
  }
}

process.on("message", (request: ChildRequest) => {
  handle(request).then(
    (reply) => process.send!(reply),
    (error: unknown) => process.send!({ cmd: "error", message: String(error) }),
  );
});
process.on("disconnect", () => {
  void service
    .close()
    .then(() => store.close())
    .finally(() => process.exit(0));
});
process.send!({ cmd: "ready", url: service.baseUrl, rootKey: service.rootKey, apiId: service.apiId, workspaceId: service.workspaceId });
