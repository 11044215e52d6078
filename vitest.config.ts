import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (p: string) => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

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
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.json" },
    unstubGlobals: true,
    restoreMocks: true,
  },
});
