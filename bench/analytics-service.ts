// Child process of the analytics bench (bench/analytics.ts): one local key service over SQLite or
// PostgreSQL + Redis on a free loopback port, its store wrapped so that writing verification events
// can be switched off (the baseline of "writing events costs verifyKey nothing"). Driven over IPC:
// `events` switches the writes, `stall` answers and resets the longest event-loop stall,
// `sweep` runs the retention (events older than a time) and answers how long it took.
// Sends `{ url, rootKey, apiId, workspaceId }` first. Exits when the parent disconnects.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { silentLogger } from "keyguard";
import { startLocalKeyService } from "keyguard/server";
import type { Storage } from "../src/server/storage/seam";
import { postgresStorage } from "../src/server/storage/postgres/store";
import { sqliteStorage } from "../src/server/storage/sqlite/store";
import { withAppend } from "./storage-wrap";

export type AnalyticsStoreConfig =
  { backend: "sqlite"; file: string } | { backend: "postgres"; postgres: string; redis: string; schema: string };
export type AnalyticsChildRequest = { cmd: "events"; on: boolean } | { cmd: "stall" } | { cmd: "sweep"; before: number };
export type AnalyticsChildReply =
  { cmd: "events" } | { cmd: "stall"; maxMs: number } | { cmd: "sweep"; ms: number; deleted: number; maxStallMs: number };

const config = JSON.parse(process.env.BENCH_ANALYTICS ?? "{}") as AnalyticsStoreConfig;
const store: Storage =
  config.backend === "sqlite"
    ? await sqliteStorage(config.file)
    : await postgresStorage({ postgres: config.postgres, redis: config.redis, schema: config.schema });
let writing = true;
const switched = withAppend(store, (events) => (writing ? store.appendVerifications(events) : Promise.resolve()));
const service = await startLocalKeyService({ storage: switched, port: 0, logger: silentLogger });
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();

async function handle(request: AnalyticsChildRequest): Promise<AnalyticsChildReply> {
  switch (request.cmd) {
    case "events":
      writing = request.on;
      return { cmd: "events" };
    case "stall": {
      const maxMs = delay.max / 1e6;
      delay.reset();
      return { cmd: "stall", maxMs };
    }
    case "sweep": {
      delay.reset();
      const t = performance.now();
      const deleted = await store.deleteVerificationsBefore(request.before);
      const ms = performance.now() - t;
      const maxStallMs = delay.max / 1e6;
      delay.reset();
      return { cmd: "sweep", ms, deleted, maxStallMs };
    }
  }
}

process.on("message", (request: AnalyticsChildRequest) => {
  void handle(request).then((reply) => process.send!(reply));
});
process.on("disconnect", () => {
  void service.close().then(() => store.close().then(() => process.exit(0)));
});
process.send!({ url: service.baseUrl, rootKey: service.rootKey, apiId: service.apiId, workspaceId: service.workspaceId });
