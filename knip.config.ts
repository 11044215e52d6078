// The unused-code check (`npm run knip`, run by .ci/run): files nothing reaches, exports nothing
// imports, dependencies nothing uses. Entries and exceptions are by pattern, so that files moving
// inside src/ need no change here; every exception says why it is not a finding.
import type { KnipConfig } from "knip";

const config: KnipConfig = {
  entry: [
    // The package's entry points (package.json `exports` and `bin`, built by tsup.config.ts from these).
    "src/{index,client,server,local,redis,web,hono,koa,fastify,nest,cli}.ts",
    // The SQLite store's worker threads: plain JavaScript files the store starts by path (tsup builds them as entries too).
    "src/**/*-worker.js",
    // The web console, bundled by scripts/build-console.mjs from its main module.
    "src/console/main.ts",
    // The hosted portal's pages, bundled by the same script from theirs.
    "src/console/portal/main.ts",
    // Each benchmark is a program of its own (scripts/build-bench.mjs builds every bench/*.ts).
    "bench/*.ts",
    "examples/**/*.ts",
    "scripts/*.mjs",
    // A script's types, which TypeScript reads in place of the script (scripts/distill-openapi.d.mts).
    "scripts/*.d.mts",
    "test/**/*.test.ts",
    "test/**/*.test-d.ts",
    // Programs the tests start in a process of their own, by path: fixtures, the runtimes' server, the webhook receiver.
    "test/**/fixtures/*.ts",
    "test/adapters/runtimes/*.ts",
    "test/support/*-receiver.ts",
  ],
  project: ["src/**/*.{ts,js}", "test/**/*.{ts,js,mjs}", "bench/**/*.ts", "examples/**/*.ts", "scripts/**/*.{mjs,mts}", "*.config.ts"],
  ignoreDependencies: [
    // Read as a file by the console's browser tests (createRequire().resolve("axe-core/axe.min.js")) and injected into the page.
    "axe-core",
    // An optional peer dependency the SQLite store loads by name at run time (Node 20 has no node:sqlite); a dev dependency for its tests.
    "better-sqlite3",
    // Runtimes, not libraries: the adapter tests run node_modules/.bin/bun and node_modules/.bin/deno.
    "bun",
    "deno",
  ],
  // Programs of the machine, not of npm: the benchmarks pin processes to a core, the tests start Redis
  // servers, make certificates (openssl) and run the documented SQLite backup (sqlite3);
  // `npm run bench:instructions` counts instructions under valgrind (callgrind_control dumps them).
  ignoreBinaries: ["taskset", "redis-server", "openssl", "sqlite3", "valgrind", "callgrind_control"],
  ignoreIssues: {
    // The wire contract names every operation's request and answer schema, and the operations' names:
    // a catalog that types.ts, the client, the server and the console take from as they need, not a
    // module with a minimal face.
    "src/protocol/contract/*.ts": ["exports", "nsExports", "types"],
  },
};

export default config;
