// The one place service-level tests get their store: env KEYGUARD_TEST_STORE chooses the backend
// every local service of the suites runs on (default: memory). Tests of the data file itself pass
// `dataFile` and stay on it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  sqliteStorage,
  createLocalKeyService,
  startLocalKeyService,
  type LocalKeyServiceInstance,
  type LocalKeyServiceOptions,
  type RunningLocalKeyService,
  postgresStorage,
  type Storage,
} from "keyguard/server";
import { overriding } from "./storage-wrapper";

/** Backends a test run can choose with KEYGUARD_TEST_STORE (or a test names itself). */
export type Backend = "memory" | "sqlite" | "postgres";

const BACKENDS: Record<Backend, () => Promise<Storage | undefined>> = {
  // undefined: the service's own default, a new memory store.
  memory: async () => undefined,
  // A new SQLite file in a directory of its own, removed when the store closes.
  sqlite: async () => {
    const dir = mkdtempSync(join(tmpdir(), "keyguard-test-sqlite-"));
    const store = await sqliteStorage(join(dir, "keys.db"));
    return overriding(store, {
      close: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    });
  },
  // A schema and Redis prefix of its own per store, dropped when the store closes.
  postgres: async () => {
    const { POSTGRES_URL, REDIS_URL, isolatedNamespace } = await import("./postgres-redis");
    const ns = isolatedNamespace();
    const store = await postgresStorage({ postgres: POSTGRES_URL, redis: REDIS_URL, schema: ns.schema, redisPrefix: ns.redisPrefix });
    let closing: Promise<void> | undefined;
    return overriding(store, { close: () => (closing ??= store.close().then(() => ns.drop())) });
  },
};

/** A fresh store of the backend under test, or undefined for the default (memory). The caller closes it. */
export async function storeUnderTest(name: string = process.env.KEYGUARD_TEST_STORE || "memory"): Promise<Storage | undefined> {
  const open = Object.hasOwn(BACKENDS, name) ? BACKENDS[name as Backend] : undefined;
  if (!open) {
    throw new Error(`KEYGUARD_TEST_STORE=${JSON.stringify(name)} is not a known backend; use one of: ${Object.keys(BACKENDS).join(", ")}.`);
  }
  return open();
}

/**
 * startLocalKeyService on the store under test, or on `backend` (unless `options` name a `storage`
 * or `dataFile`); its `close()` also closes that store.
 */
export async function startLocalUnderTest(options: LocalKeyServiceOptions = {}, backend?: Backend): Promise<RunningLocalKeyService> {
  const store =
    options.storage === undefined && options.store === undefined && options.dataFile === undefined
      ? await storeUnderTest(backend)
      : undefined;
  let running: RunningLocalKeyService;
  try {
    running = await startLocalKeyService(store ? { ...options, storage: store } : options);
  } catch (err) {
    await store?.close();
    throw err;
  }
  const close = running.close;
  let closing: Promise<void> | undefined;
  return { ...running, close: () => (closing ??= close().finally(() => store?.close())) };
}

/** createLocalKeyService on the store under test; its `close()` also closes that store. */
export async function createLocalUnderTest(options: LocalKeyServiceOptions = {}): Promise<LocalKeyServiceInstance> {
  const store = await storeUnderTest();
  let instance: LocalKeyServiceInstance;
  try {
    instance = await createLocalKeyService(store ? { ...options, storage: store } : options);
  } catch (err) {
    await store?.close();
    throw err;
  }
  const close = instance.close;
  let closing: Promise<void> | undefined;
  return { ...instance, close: () => (closing ??= close().finally(() => store?.close())) };
}
