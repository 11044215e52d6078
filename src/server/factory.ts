// createLocalKeyService: the service core and its request handler, without listening. Mount the
// app anywhere (`outer.use("/prefix", app)`), serve it with node:http, or hand it to supertest. Also how both entry points
// open the store and the core.
import { consoleHandler } from "./http/console-files";
import { createApp, type LocalServiceApp } from "./http/app";
import { meteredStore } from "./storage/metered-store";
import { loadServiceMetrics } from "./metrics";
import { parseOptions, type LocalKeyServiceOptions, type LocalServiceConfig } from "./options";
import { LocalServiceConfigError } from "./errors";
import { ServiceCore, type LocalKeyService } from "./service";
import type { Storage } from "./storage/seam";
import { memoryStorage } from "./storage/memory/store";
import { sqliteStorage } from "./storage/sqlite/store";
import { warnIfReadable } from "./storage/sqlite/open";
import { postgresStorage } from "./storage/postgres/store";

export interface LocalKeyServiceInstance {
  /**
   * Request handler serving `POST /v2/<group>.<operation>`, `GET /v2/liveness` and, with the
   * `metrics` option, `GET /metrics`: pass it to
   * `http.createServer(app)` or mount it in Express (`outer.use("/prefix", app)`).
   */
  app: LocalServiceApp;
  /** The admin surface: bootstrap ids and root key, createWorkspace/createApi/createRootKey, faults, exportState. */
  service: LocalKeyService;
  /**
   * Writes the verification events still buffered, then closes the store when the service opened
   * it (not a `store` passed in). Safe to call twice.
   */
  close(): Promise<void>;
}

/** The configured store, and whether the service opened it (and so closes it). `dataFile` is SQLite. */
export async function openStore(config: LocalServiceConfig): Promise<{ store: Storage; owned: boolean }> {
  if (config.storage) return { store: config.storage, owned: false };
  if (config.postgres) {
    const { postgres, redis, redisCaFile, redisCluster, schema } = config.postgres;
    const store = await postgresStorage({
      postgres,
      redis,
      ...(redisCaFile !== undefined && { redisCaFile }),
      ...(redisCluster !== undefined && { redisCluster }),
      ...(schema !== undefined && { schema }),
    });
    return { store, owned: true };
  }
  if (config.dataFile) {
    warnIfReadable(config.dataFile, config.logger);
    return { store: await sqliteStorage(config.dataFile), owned: true };
  }
  return { store: memoryStorage(), owned: true };
}

/** Opens the core over an opened store; on failure closes the store if owned. */
export async function openCore(config: LocalServiceConfig, opened: { store: Storage; owned: boolean }): Promise<ServiceCore> {
  try {
    const metrics = config.metrics && (await loadServiceMetrics(config.metrics));
    return await ServiceCore.open(config, metrics ? meteredStore(opened.store, metrics) : opened.store, metrics);
  } catch (err) {
    if (opened.owned) await opened.store.close().catch(() => {});
    if (config.dataFile && !(err instanceof LocalServiceConfigError)) {
      throw new LocalServiceConfigError(
        `keyguard/server: cannot write dataFile ${JSON.stringify(config.dataFile)}: ${(err as Error).message}. ` +
          "Check that its directory exists and is writable.",
        { option: "dataFile" },
      );
    }
    throw err;
  }
}

/** Closes a store once, when owned. */
export function storeCloser(opened: { store: Storage; owned: boolean }): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= opened.owned ? opened.store.close() : Promise.resolve());
}

/** The service and its app. Async: the bootstrap is read from (or written to) the store first. */
export async function createLocalKeyService(options?: LocalKeyServiceOptions): Promise<LocalKeyServiceInstance> {
  const config = parseOptions(options);
  // The console's files are read before anything opens: missing files are a config error.
  const consoleFiles = config.console ? consoleHandler() : undefined;
  const opened = await openStore(config);
  const core = await openCore(config, opened);
  const closeStore = storeCloser(opened);
  let closing: Promise<void> | undefined;
  return { app: createApp(core, consoleFiles), service: core, close: () => (closing ??= core.close().finally(closeStore)) };
}
