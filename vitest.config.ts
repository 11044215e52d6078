import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (p: string) => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

/**
 * The service-level suites: they start the local key service through test/support/store-under-test.ts,
 * so each runs again on every storage backend (the store conformance suite covers the seam itself).
 */
const SERVICE_SUITES = [
  "test/local/{auth,clock,concurrency,ip-allowlist,keys,migrate-keys,ratelimit,recoverable,resources,role-permissions,server,state-file,store-failures,transport,units,validation,verify}.test.ts",
  "test/interop/*.test.ts",
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

export default defineConfig({
  resolve: {
    alias: [
      { find: /^keyguard\/client$/, replacement: src("client.ts") },
      { find: /^keyguard\/local$/, replacement: src("local.ts") },
      { find: /^keyguard\/redis$/, replacement: src("redis.ts") },
      { find: /^keyguard$/, replacement: src("index.ts") },
    ],
  },
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    unstubGlobals: true,
    restoreMocks: true,
    projects: [
      {
        extends: true,
        test: {
          name: "all",
          include: ["test/**/*.test.ts"],
          typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.json" },
        },
      },
      onBackend("sqlite"),
    ],
  },
});
