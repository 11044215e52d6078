import { defineConfig } from "tsup";

// The SQLite store's workers (checkpoints, analytics): files of their own, which the store's code (in
// whichever bundle or chunk, ESM or CJS) finds next to itself in dist/ as it does next to itself in the source.
const WORKERS = ["sqlite-checkpoint-worker", "sqlite-analytics-worker"];

export default defineConfig([
  {
    entry: {
      index: "src/index.ts",
      client: "src/client.ts",
      server: "src/server.ts",
      local: "src/local.ts",
      redis: "src/redis.ts",
      web: "src/web.ts",
      hono: "src/hono.ts",
      koa: "src/koa.ts",
      fastify: "src/fastify.ts",
      nest: "src/nest.ts",
      cli: "src/cli.ts",
    },
    format: ["esm", "cjs"],
    dts: { compilerOptions: { composite: false } },
    target: "node20",
    platform: "node",
    sourcemap: true,
    // Everything but the workers, which the build below writes at the same time.
    clean: WORKERS.map((w) => `!${w}.js*`),
    splitting: true,
    // import.meta.url in the CJS build (where the console's files and the worker are found) becomes the file's URL.
    shims: true,
    // Optional peer dependencies, loaded lazily: by keyguard/redis, and by the client's `telemetry`;
    // the frameworks, imported only by their adapters' entries.
    external: ["ioredis", "@opentelemetry/api", "hono", "koa", "fastify", "fastify-plugin", "@nestjs/common"],
    // typebox (the wire contract's schema builders) ships ESM only: bundled, so that the CJS build
    // needs no require() of an ES module (Node before 20.19 cannot).
    noExternal: ["typebox"],
  },
  {
    // ESM only: the CJS build starts it too (a worker thread loads an ES module whoever starts it).
    entry: Object.fromEntries(WORKERS.map((w) => [w, `src/server/storage/sqlite/${w}.js`])),
    format: ["esm"],
    target: "node20",
    platform: "node",
    sourcemap: true,
  },
]);
