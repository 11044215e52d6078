import { defineConfig } from "tsup";

export default defineConfig({
  entry: {
    index: "src/index.ts",
    client: "src/client.ts",
    server: "src/server.ts",
    local: "src/local.ts",
    redis: "src/redis.ts",
    cli: "src/cli.ts",
  },
  format: ["esm", "cjs"],
  dts: { compilerOptions: { composite: false } },
  target: "node20",
  platform: "node",
  sourcemap: true,
  clean: true,
  splitting: true,
  // import.meta.url in the CJS build (where the console's files are found) becomes the file's URL.
  shims: true,
  // Optional peer dependencies, loaded lazily: by keyguard/redis, and by the client's `telemetry`.
  external: ["ioredis", "@opentelemetry/api"],
  // typebox (the wire contract's schema builders) ships ESM only: bundled, so that the CJS build
  // needs no require() of an ES module (Node before 20.19 cannot).
  noExternal: ["typebox"],
});
