import js from "@eslint/js";
import boundaries from "eslint-plugin-boundaries";
import tseslint from "typescript-eslint";

// The layers of src/ (CONTRIBUTING.md, "Rules of the house"), most with their entry file, as categories
// of files (a layer is a folder plus a file at the top of src/). A top-level file that is not an entry is
// shared by all layers (config-error, logger, unknown-options, the option checks, …) and imports only
// other shared files. The first pattern that matches a file gives its layer. (Categories of files, not
// the plugin's elements: elements are folders, and most layers have a file outside their folder.)
const LAYERS = [
  { category: "cli", pattern: ["src/cli.ts", "src/cli/**"] },
  { category: "client", pattern: ["src/client.ts", "src/client/**"] },
  // The middleware's core (framework-free, no entry of its own); its face, the one file of it that the
  // adapters and entries import; and its cache store, the seam a store backend (keyguard/redis) implements.
  { category: "middleware-face", pattern: "src/middleware/index.ts" },
  { category: "middleware-store", pattern: "src/middleware/cache-store.ts" },
  { category: "middleware", pattern: "src/middleware/**" },
  // The framework adapters over the core, Express's included, each with its entry (keyguard, keyguard/web, …).
  {
    category: "adapters",
    pattern: ["src/index.ts", "src/web.ts", "src/hono.ts", "src/koa.ts", "src/fastify.ts", "src/nest.ts", "src/adapters/**"],
  },
  { category: "redis", pattern: ["src/redis.ts", "src/redis/**"] },
  // The key server, in layers of its own (docs/architecture.md, "The key server's layers"), from its
  // entries down to its error classes and record types.
  { category: "server", pattern: ["src/server.ts", "src/local.ts", "src/server/factory.ts", "src/server/listen.ts"] },
  { category: "server/http", pattern: "src/server/http/**" },
  { category: "server/service", pattern: ["src/server/service.ts", "src/server/options.ts"] },
  { category: "server/operations", pattern: "src/server/operations/**" },
  { category: "server/leaks", pattern: "src/server/leaks/**" },
  { category: "server/webhooks", pattern: "src/server/webhooks/**" },
  { category: "server/storage", pattern: "src/server/storage/**" },
  { category: "server/metrics", pattern: "src/server/metrics.ts" },
  { category: "server/analytics", pattern: "src/server/analytics/**" },
  { category: "server/domain", pattern: "src/server/domain/**" },
  { category: "server/base", pattern: ["src/server/errors.ts", "src/server/records.ts", "src/server/peer-module.ts"] },
  { category: "protocol", pattern: "src/protocol/**" },
  { category: "console", pattern: "src/console/**" },
  { category: "shared", pattern: "src/*" },
];

/** Layers listed from the top down, each allowed to import every layer after it (and protocol, shared). */
function serverLayers(topDown) {
  return Object.fromEntries(topDown.map((layer, i) => [layer, [...topDown.slice(i + 1), "protocol", "shared"]]));
}

// What each layer may import besides itself: never upward, and the server never the middleware or the
// client. Above the middleware's core, only its face: the core's files are free to change behind it,
// and the core never imports its own face. keyguard/redis takes the store seam alone, so that it (and
// the CLI, which loads it for --invalidate) does not load the whole core. The console is a browser app
// that talks to the server over HTTP: it takes the wire contract (types and lists) and nothing else. What it
// imports must run in a browser: its typecheck has no Node types, so a module that imports node: fails it.
const MAY_IMPORT = {
  shared: [],
  protocol: ["shared"],
  client: ["protocol", "shared"],
  "middleware-store": ["protocol", "shared"],
  middleware: ["middleware-store", "client", "protocol", "shared"],
  "middleware-face": ["middleware", "middleware-store"],
  // On top of the core: nothing imports them.
  adapters: ["middleware-face", "client", "protocol", "shared"],
  redis: ["middleware-store", "client", "protocol", "shared"],
  // Each layer of the key server imports only the layers below it (in this order), the wire contract
  // and the shared modules: never the middleware or the client.
  ...serverLayers([
    "server",
    "server/http",
    "server/service",
    "server/operations",
    "server/leaks",
    "server/webhooks",
    "server/storage",
    "server/metrics",
    "server/analytics",
    "server/domain",
    "server/base",
  ]),
  // keyguard migrate loads the state-file migration alone (server/storage), without the HTTP service;
  // keyguard import talks to two key services through the client.
  cli: ["server", "server/storage", "redis", "client", "protocol", "shared"],
  console: ["protocol"],
};

const layerPolicies = Object.entries(MAY_IMPORT).map(([from, to]) => ({
  from: { file: { categories: from } },
  allow: { to: { file: { categories: [from, ...to] } } },
}));

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "coverage/**", "bench/results/**", "bench/.build/**", "test/docs/.examples/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
    },
  },
  {
    files: ["src/**/*.{ts,js}"],
    ignores: ["src/cli.ts", "src/cli/**"],
    rules: { "no-console": "error" },
  },
  {
    // Import boundaries between the layers; tests, benchmarks, examples and scripts may import any layer.
    files: ["src/**/*.{ts,js}"],
    plugins: { boundaries },
    settings: {
      "boundaries/files": LAYERS,
      "boundaries/files-single-match": true,
      "boundaries/include": ["src/**"],
      "import/resolver": { typescript: { project: "tsconfig.json" } },
    },
    rules: {
      "boundaries/dependencies": ["error", { default: "disallow", policies: layerPolicies }],
    },
  },
);
