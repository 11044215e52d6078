// The import-boundary lint rule (eslint.config.js) keeps the layers apart: small sources linted as if
// they stood at real paths in src/, with the project's own configuration.
import { join } from "node:path";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const root = join(__dirname, "..");
const eslint = new ESLint({ cwd: root });

/** The boundary rule's messages for `code` linted as the file `path` (relative to the repository). */
async function boundaryMessages(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, path) });
  return result!.messages.filter((m) => m.ruleId === "boundaries/dependencies" || m.fatal).map((m) => m.message);
}

const refused = (from: string, to: string) =>
  `There is no policy allowing dependencies from file of category "${from}" to file of category "${to}"`;

describe("import boundaries", () => {
  it("the wire contract imports nothing above it", async () => {
    const code = 'import { permissionsCheck } from "../middleware/guard-checks";\nexport const check = permissionsCheck;\n';
    expect(await boundaryMessages("src/protocol/probe.ts", code)).toEqual([refused("protocol", "middleware")]);
    const lazy = 'export const load = () => import("../server/service");\n';
    expect(await boundaryMessages("src/protocol/probe.ts", lazy)).toEqual([refused("protocol", "server/service")]);
  });

  it("the client imports neither the middleware (also through the package name) nor the server", async () => {
    const code =
      'import type { Logger } from "keyguard";\nimport { ERROR_CODES } from "../middleware/errors";\nimport { startLocalKeyService } from "../server";\nexport type L = Logger;\nexport const all = [ERROR_CODES, startLocalKeyService];\n';
    expect(await boundaryMessages("src/client/probe.ts", code)).toEqual([
      refused("client", "adapters"),
      refused("client", "middleware"),
      refused("client", "server"),
    ]);
  });

  it("the key server imports neither the middleware nor the client, not even their types", async () => {
    const code =
      'import { createDecisionCore } from "../../middleware/decide";\nimport type { ClientOptions } from "../../client";\nexport const a = createDecisionCore;\nexport type C = ClientOptions;\n';
    expect(await boundaryMessages("src/server/http/probe.ts", code)).toEqual([
      refused("server/http", "middleware"),
      refused("server/http", "client"),
    ]);
  });

  it("the key server's layers import downward only: the rules never the store, the store never the operations", async () => {
    // Each of these imports ran the other way before the server had layers.
    const upward: Array<[string, string, string, string]> = [
      [
        "src/server/domain/probe.ts",
        'import type { StorageTx } from "../storage/seam";\nexport type T = StorageTx;\n',
        "server/domain",
        "server/storage",
      ],
      [
        "src/server/domain/probe.ts",
        'import type { OpContext } from "../operations/operation";\nexport type C = OpContext;\n',
        "server/domain",
        "server/operations",
      ],
      [
        "src/server/storage/probe.ts",
        'import { errorEnvelope } from "../http/envelope";\nexport const e = errorEnvelope;\n',
        "server/storage",
        "server/http",
      ],
      [
        "src/server/storage/probe.ts",
        'import type { ServiceCore } from "../service";\nexport type S = ServiceCore;\n',
        "server/storage",
        "server/service",
      ],
      [
        "src/server/analytics/probe.ts",
        'import type { Storage } from "../storage/seam";\nexport type S = Storage;\n',
        "server/analytics",
        "server/storage",
      ],
      [
        "src/server/operations/probe.ts",
        'import { createApp } from "../http/app";\nexport const a = createApp;\n',
        "server/operations",
        "server/http",
      ],
      [
        "src/server/webhooks/probe.ts",
        'import { keyLeaked } from "../leaks/respond";\nexport const k = keyLeaked;\n',
        "server/webhooks",
        "server/leaks",
      ],
      [
        "src/server/http/probe.ts",
        'import { createLocalKeyService } from "../factory";\nexport const c = createLocalKeyService;\n',
        "server/http",
        "server",
      ],
      [
        "src/server/errors.ts",
        'import type { Storage } from "./storage/seam";\nexport type S = Storage;\n',
        "server/base",
        "server/storage",
      ],
    ];
    for (const [path, code, from, to] of upward) {
      expect({ path, code, messages: await boundaryMessages(path, code) }).toEqual({ path, code, messages: [refused(from, to)] });
    }
    // The same layers imported downward pass.
    const downward: Array<[string, string]> = [
      [
        "src/server/operations/probe.ts",
        'import type { StorageTx } from "../storage/seam";\nimport { ServiceError } from "../errors";\nexport type T = StorageTx;\nexport const e = ServiceError;\n',
      ],
      [
        "src/server/http/probe.ts",
        'import type { ServiceCore } from "../service";\nimport { findOperation } from "../operations/table";\nexport type S = ServiceCore;\nexport const o = findOperation;\n',
      ],
      [
        "src/server/storage/probe.ts",
        'import { limitCounter } from "../domain/sliding-window";\nimport type { KeyRecord } from "../records";\nexport const l = limitCounter;\nexport type K = KeyRecord;\n',
      ],
    ];
    for (const [path, code] of downward) expect({ path, messages: await boundaryMessages(path, code) }).toEqual({ path, messages: [] });
  });

  it("the console imports nothing from the server or the client, and types and values from the wire contract", async () => {
    const server = 'import { startLocalKeyService } from "../server";\nexport const s = startLocalKeyService;\n';
    expect(await boundaryMessages("src/console/probe.ts", server)).toEqual([refused("console", "server")]);
    const client = 'import { createClient } from "../../client";\nexport const c = createClient;\n';
    expect(await boundaryMessages("src/console/pages/probe.ts", client)).toEqual([refused("console", "client")]);
    const value = 'import { WEBHOOK_EVENT_TYPES } from "../../protocol/contract/webhook-events";\nexport const w = WEBHOOK_EVENT_TYPES;\n';
    expect(await boundaryMessages("src/console/pages/probe.ts", value)).toEqual([]);
    const types = 'import type { KeyInfo } from "../../protocol/types";\nexport type K = KeyInfo;\n';
    expect(await boundaryMessages("src/console/pages/probe.ts", types)).toEqual([]);
  });

  it("a shared module at the top of src imports only other shared modules", async () => {
    const code =
      'import { createClient } from "./client";\nimport type { Logger } from "./logger";\nexport const c = createClient;\nexport type L = Logger;\n';
    expect(await boundaryMessages("src/probe-checks.ts", code)).toEqual([refused("shared", "client")]);
  });

  it("allows the imports the layers make: down, sideways into shared modules, and within a layer", async () => {
    const legal: Array<[string, string]> = [
      [
        "src/middleware/probe.ts",
        'import { createClient } from "../client";\nimport { keyHash } from "../protocol/key-hash";\nimport { silentLogger } from "../logger";\nimport { buildStatusPolicy } from "./policy";\nexport const all = [createClient, keyHash, silentLogger, buildStatusPolicy];\n',
      ],
      ["src/redis/probe.ts", 'export { memoryStore } from "../middleware/cache-store";\n'],
      [
        "src/server/storage/probe.ts",
        'import type { KeyInfo } from "../../protocol/types";\nimport { describeValue } from "../../config-error";\nexport type K = KeyInfo;\nexport const d = describeValue;\n',
      ],
      ["src/probe-cli.ts", 'import { describeValue } from "./config-error";\nexport const d = describeValue;\n'],
      // Tests may import any layer.
      [
        "test/probe.test.ts",
        'import { apiKeyAuth } from "../src/adapters/express/api-key-auth";\nimport { startLocalKeyService } from "../src/server";\nexport const all = [apiKeyAuth, startLocalKeyService];\n',
      ],
    ];
    for (const [path, code] of legal) expect({ path, messages: await boundaryMessages(path, code) }).toEqual({ path, messages: [] });
  });

  it("the framework adapters sit on the middleware: they import it and what it imports, and nothing imports them", async () => {
    const legal =
      'import { createDecisionCore } from "../middleware";\nimport { createFetchClient } from "../client/fetch-client";\nimport { webKeyHash } from "../protocol/key-hash-web";\nimport { silentLogger } from "../logger";\nexport const all = [createDecisionCore, createFetchClient, webKeyHash, silentLogger];\n';
    expect(await boundaryMessages("src/adapters/probe.ts", legal)).toEqual([]);
    expect(await boundaryMessages("src/probe-entry.ts", 'export { webApiKeyAuth } from "./adapters/web";\n')).toEqual([
      refused("shared", "adapters"),
    ]);
    const up = 'import { webApiKeyAuth } from "../adapters/web";\nexport const w = webApiKeyAuth;\n';
    expect(await boundaryMessages("src/middleware/probe.ts", up)).toEqual([refused("middleware", "adapters")]);
    expect(await boundaryMessages("src/client/probe.ts", up)).toEqual([refused("client", "adapters")]);
    const server = 'import { startLocalKeyService } from "../server";\nexport const s = startLocalKeyService;\n';
    expect(await boundaryMessages("src/adapters/probe.ts", server)).toEqual([refused("adapters", "server")]);
    expect(await boundaryMessages("src/hono.ts", 'export { apiKeyAuth } from "./adapters/hono";\n')).toEqual([]);
  });

  it("above the middleware's core, only its face (keyguard/redis: the store seam); the core never imports its face", async () => {
    const face =
      'import { createDecisionCore, type VerifiedKey } from "../../middleware";\nexport const c = createDecisionCore;\nexport type K = VerifiedKey;\n';
    expect(await boundaryMessages("src/adapters/express/probe.ts", face)).toEqual([]);
    const inside = 'import { createDecisionCore } from "../../middleware/decide";\nexport const c = createDecisionCore;\n';
    expect(await boundaryMessages("src/adapters/express/probe.ts", inside)).toEqual([refused("adapters", "middleware")]);
    // Types too.
    const types = 'import type { VerifiedKey } from "../middleware/verified-key";\nexport type K = VerifiedKey;\n';
    expect(await boundaryMessages("src/adapters/probe.ts", types)).toEqual([refused("adapters", "middleware")]);
    expect(await boundaryMessages("src/hono.ts", 'export { STATUS_PRESETS } from "./middleware/policy";\n')).toEqual([
      refused("adapters", "middleware"),
    ]);
    expect(await boundaryMessages("src/index.ts", 'export { STATUS_PRESETS, memoryStore } from "./middleware";\n')).toEqual([]);
    expect(await boundaryMessages("src/adapters/probe.ts", 'export { memoryStore } from "../middleware/cache-store";\n')).toEqual([
      refused("adapters", "middleware-store"),
    ]);
    const redis =
      'import { deepFreeze } from "../middleware/cache-store";\nimport { createDecisionCore } from "../middleware";\nexport const all = [deepFreeze, createDecisionCore];\n';
    expect(await boundaryMessages("src/redis/probe.ts", redis)).toEqual([refused("redis", "middleware-face")]);
    const own = 'import { isThenable } from ".";\nexport const t = isThenable;\n';
    expect(await boundaryMessages("src/middleware/probe.ts", own)).toEqual([refused("middleware", "middleware-face")]);
    const express = 'import { apiKeyAuth } from "../adapters/express/api-key-auth";\nexport const a = apiKeyAuth;\n';
    expect(await boundaryMessages("src/middleware/probe.ts", express)).toEqual([refused("middleware", "adapters")]);
  });
});
