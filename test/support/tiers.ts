// The fast tier (`npm run test:fast`): test files that need no server: no PostgreSQL, Redis or
// Chromium, no child process, no key service of their own in another process (an in-process one on
// 127.0.0.1 port 0 is fine). About a minute on a 2-core machine. vitest.config.ts runs them in the
// projects "fast" and "fast-isolated", and leaves them out of the others, so `npm test` runs each
// once. test/support/fast-tier-guard.ts fails a file here that starts a child process or reaches
// PostgreSQL or Redis; test/fast-tier-guard.test.ts checks the lists themselves.

/** Files that share one module graph per worker (vitest `isolate: false`): no module mocks. */
export const FAST_SHARED = [
  "test/config-error.test.ts",
  "test/conventions.test.ts",
  "test/fast-tier-guard.test.ts",
  "test/option-checks.test.ts",
  "test/unknown-options.test.ts",
  "test/client/abort.test.ts",
  "test/client/client.test.ts",
  "test/client/envelope.test.ts",
  "test/client/errors.test.ts",
  "test/client/production-errors.test.ts",
  "test/client/redact.test.ts",
  "test/client/retry.test.ts",
  "test/client/secrets.test.ts",
  "test/docs/links.test.ts",
  "test/docs/readme.test.ts",
  "test/middleware/cache-integration.test.ts",
  "test/middleware/cache-store.test.ts",
  "test/middleware/checksum.test.ts",
  "test/middleware/codes.test.ts",
  "test/middleware/key-hash-memo.test.ts",
  "test/middleware/denials.test.ts",
  "test/middleware/express.test.ts",
  "test/middleware/extract-key.test.ts",
  "test/middleware/header-forms.test.ts",
  "test/middleware/hot-path.test.ts",
  "test/middleware/node-http.test.ts",
  "test/middleware/on-decision.test.ts",
  "test/middleware/policy.test.ts",
  "test/middleware/preflight.test.ts",
  "test/middleware/ratelimit-headers.test.ts",
  "test/middleware/rotation-grace.test.ts",
  "test/middleware/request-shape-contract.test.ts",
  "test/middleware/request-shape.test.ts",
  "test/middleware/service-failures.test.ts",
  "test/middleware/unknown-key-limit.test.ts",
  "test/middleware/verify.test.ts",
  "test/protocol/contract/check.test.ts",
  "test/protocol/invalidation.test.ts",
  "test/protocol/key-checksum.test.ts",
  "test/protocol/key-hash.test.ts",
  "test/protocol/openapi-comparison.test.ts",
  "test/protocol/permission-query.test.ts",
  "test/reliability/extract-key.property.test.ts",
  "test/reliability/permission-query.property.test.ts",
  "test/reliability/secrets.test.ts",
  "test/server/domain/caller-value.test.ts",
  "test/server/domain/ip-allowlist.test.ts",
  "test/server/domain/pagination.test.ts",
  "test/server/domain/root-key-strength.test.ts",
  "test/server/operations/wildcard.test.ts",
  "test/server/storage/audit-retention.test.ts",
  "test/server/peer-module.test.ts",
  "test/server/storage/sqlite/conformance.test.ts",
  "test/server/storage/store-errors.test.ts",
  "test/server/storage/store-memory.test.ts",
];

/** Files that mock modules or globals of their own (vi.mock, vi.doMock, stubbed env): a module graph per file. */
export const FAST_ISOLATED = [
  "test/client/options.test.ts",
  "test/client/production-clock.test.ts",
  "test/middleware/guards.test.ts",
  "test/middleware/parse-options.test.ts",
  "test/middleware/request-shape-parse.test.ts",
  "test/protocol/key-hash-web.test.ts",
  "test/server/storage/sqlite/open-failure.test.ts",
];

export const FAST_FILES = [...FAST_SHARED, ...FAST_ISOLATED];
