import { connect } from "node:net";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";
import { FAST_FILES, FAST_ISOLATED, FAST_SHARED } from "./test/support/tiers";

const src = (p: string) => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

/**
 * The service-level suites: they start the local key service through test/support/store-under-test.ts,
 * so each runs again on every storage backend (the store conformance suite covers the seam itself).
 */
const SERVICE_SUITES = [
  "test/server/operations/{audit,audit-coverage,auth,authorisation,clock,root-keys,concurrency,console-listing,list-keys-sort,namespace-usage,races,echo,ip-allowlist,api-settings,checksummed-keys,keys,secrets-in-errors,migrate-keys,portal,ratelimit,recoverable,resources,role-permissions,units,validation,verify}.test.ts",
  "test/server/http/{secret-scanning,server,transport}.test.ts",
  "test/server/storage/{state-file,store-failures,verification-events}.test.ts",
  "test/server/webhooks/{webhooks,receiver-features}.test.ts",
  "test/protocol/openapi-answers.test.ts",
  // sdk-analytics.test.ts picks its stores itself (SQLite and PostgreSQL).
  "test/interop/sdk.test.ts",
  "test/interop/sdk-portal.test.ts",
  "test/client/local-service.test.ts",
];

/** The service-level suites on one backend, chosen by KEYGUARD_TEST_STORE. */
const onBackend = (name: string) => ({
  extends: true as const,
  test: {
    name: `service on ${name}`,
    include: SERVICE_SUITES,
    env: { KEYGUARD_TEST_STORE: name },
    typecheck: { enabled: false },
  },
});

/** Whether something listens on 127.0.0.1:`port` (answers within a second). */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port, timeout: 1000 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
    socket.once("timeout", () => done(false));
  });
}

/**
 * The service-level suites run on PostgreSQL + Redis when both listen here. Without them they do not
 * run, and the output says so; with env CI set they always run (and fail without the servers).
 */
async function postgresProjects() {
  const up = (await listening(5432)) && (await listening(6379));
  if (up || process.env.CI) return [onBackend("postgres")];
  console.log(
    "[skipped] the service-level suites on PostgreSQL + Redis did not run: nothing listens on 127.0.0.1:5432 and 127.0.0.1:6379. " +
      "Start PostgreSQL (database test) and Redis there to run them.",
  );
  return [];
}

const postgres = await postgresProjects();

/** Fails a fast-tier file that starts a child process or reaches PostgreSQL or Redis. */
const FAST_GUARD = "test/support/fast-tier-guard.ts";

export default defineConfig({
  resolve: {
    alias: [
      { find: /^keyguard\/client$/, replacement: src("client.ts") },
      { find: /^keyguard\/server$/, replacement: src("server.ts") },
      { find: /^keyguard\/local$/, replacement: src("local.ts") },
      { find: /^keyguard\/redis$/, replacement: src("redis.ts") },
      { find: /^keyguard\/web$/, replacement: src("web.ts") },
      { find: /^keyguard\/hono$/, replacement: src("hono.ts") },
      { find: /^keyguard\/koa$/, replacement: src("koa.ts") },
      { find: /^keyguard\/fastify$/, replacement: src("fastify.ts") },
      { find: /^keyguard\/nest$/, replacement: src("nest.ts") },
      { find: /^keyguard$/, replacement: src("index.ts") },
    ],
  },
  test: {
    // Builds the web console into dist/console: its suites run on a fresh clone, before any build.
    globalSetup: ["test/support/build-console.ts"],
    // Most of the suite waits (on servers, child processes, Redis, PostgreSQL, the browser), so it
    // runs more files at once than there are cores: Vitest's default (cores - 1) is one file at a
    // time on a 2-core machine, 751 s for the suite where 3 take 485 s.
    maxWorkers: Math.max(3, availableParallelism() - 1),
    // Limits for hangs, not for speed: a test that checks what happens must not fail because the
    // machine is busy (20 s ran out for tests of a few seconds at load 15 on 2 cores). Tests about
    // time limits keep their own short ones against services that never answer.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll waits for what a page or a server shows eventually: as long as a browser action
    // may (test/console/browser.ts), not Vitest's 1 s, which a loaded machine overruns.
    expect: { poll: { timeout: 8_000 } },
    unstubGlobals: true,
    restoreMocks: true,
    projects: [
      {
        // The fast tier (test/support/tiers.ts), files without module mocks: one module graph per
        // worker, not per file (loading keyguard's sources again for each file was most of its time).
        extends: true,
        test: { name: "fast", include: FAST_SHARED, setupFiles: [FAST_GUARD], isolate: false, typecheck: { enabled: false } },
      },
      {
        // The fast tier's files that mock modules: isolated, as everywhere else.
        extends: true,
        test: { name: "fast-isolated", include: FAST_ISOLATED, setupFiles: [FAST_GUARD], typecheck: { enabled: false } },
      },
      {
        // Everything else outside the browser: servers, child processes, the service on memory.
        extends: true,
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "test/console/**", ...FAST_FILES],
          // The type tests (*.test-d.ts). `npm run typecheck` (tsc over test/) checks the same
          // files, so CI, which runs it first, turns this off (KEYGUARD_VITEST_TYPECHECK=0): tsc again
          // beside the tests took 69 s of the 2 cores on every Node.js.
          typecheck: {
            enabled: process.env.KEYGUARD_VITEST_TYPECHECK !== "0",
            include: ["test/**/*.test-d.ts"],
            tsconfig: "./tsconfig.json",
          },
        },
      },
      {
        // The console's journeys in Chromium: a test is tens of browser steps, each failing on its own
        // within 8 s (test/console/browser.ts). Their sum on a loaded 2-core machine (three test files
        // and Chromium at once) has overrun 20 s for a journey of 4 s alone, so the budget per test is
        // the sum's, not one step's. A check polled on the page (`expect.poll`) gets the same 8 s as
        // a browser step: vitest's default of 1 s ran out in CI for a filter's rows to render.
        extends: true,
        test: {
          name: "console",
          include: ["test/console/**/*.test.ts"],
          testTimeout: 60_000,
          expect: { poll: { timeout: 8_000 } },
        },
      },
      onBackend("sqlite"),
      ...postgres,
    ],
  },
});
