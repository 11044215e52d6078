// What bench/storage.ts and its child bench/storage-service.ts share: the store to open, the IPC
// messages, and the seeded keys (key i is known to both, so the parent can verify seeded keys).

export type StoreConfig =
  | { backend: "memory" }
  | { backend: "sqlite"; file: string }
  | {
      backend: "postgres";
      postgres: string;
      redis: string;
      schema: string;
      recordCacheTtlMs?: number;
      cacheKeys?: boolean;
      optimisticWrites?: boolean;
    };

export type ChildRequest = { cmd: "seed"; from: number; to: number } | { cmd: "stall" } | { cmd: "size" };

export type ChildReply =
  | { cmd: "ready"; url: string; rootKey: string; apiId: string; workspaceId: string }
  | { cmd: "seed"; ms: number }
  /**
   * Since the last `stall`: the longest event-loop delay (ms); storage calls made, how many took
   * over 10 ms, the 99.9th percentile and the longest (ms of wall time of the synchronous part, and
   * which call); the process's CPU time since it started (µs, user + system, every thread).
   */
  | { cmd: "stall"; maxMs: number; count: number; overTen: number; p999Ms: number; longestMs: number; longest: string; cpuMicros: number }
  /** SQLite: the data file and its WAL, and the WAL alone (bytes). */
  | { cmd: "size"; bytes: number | undefined; walBytes?: number }
  | { cmd: "error"; message: string };

/** Seeded key i: even ones have credits (a billion), odd ones none. */
export function benchKey(i: number): { key: string; credits: boolean } {
  return { key: `bench_${i.toString(36)}_seeded`, credits: i % 2 === 0 };
}
