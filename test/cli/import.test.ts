// `keyguard import` in a child process between two real key services on port 0: the old one (an
// API storing keys) and keyguard's. Recoverable keys arrive with their settings and verify with
// their original plaintext; the others are counted and left for their first request; a second run
// imports nothing again; no key or root key is printed.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "keyguard/client";
import { silentLogger } from "keyguard";
import { startLocalKeyService, type RunningLocalKeyService } from "keyguard/server";
import { killChildren, run } from "./cli-process";
import { GENEROUS } from "../support/time-limits";

const dir = mkdtempSync(join(tmpdir(), "keyguard-import-"));
let old: RunningLocalKeyService;
let here: RunningLocalKeyService;
let storing: string;
beforeAll(async () => {
  [old, here] = await Promise.all([
    startLocalKeyService({ logger: silentLogger, encryptionKey: randomBytes(32).toString("base64") }),
    startLocalKeyService({ logger: silentLogger }),
  ]);
  ({ apiId: storing } = await old.service.createApi({ name: "stores-keys", storeKeys: true }));
});
afterEach(killChildren);
afterAll(async () => {
  await Promise.all([old.close(), here.close()]);
  rmSync(dir, { recursive: true, force: true });
});

describe("keyguard import", () => {
  it("copies every recoverable key with its settings, counts the rest, and imports nothing twice", async () => {
    const oldClient = createClient({ baseUrl: old.baseUrl, rootKey: old.rootKey, logger: silentLogger, ...GENEROUS });
    const made = [];
    for (let i = 0; i < 3; i++) {
      made.push(
        await oldClient.keys.createKey({
          apiId: storing,
          recoverable: true,
          name: `bulk ${i}`,
          meta: { i },
          permissions: ["docs.read"],
          externalId: "customer-bulk",
          credits: { remaining: 10 + i },
        }),
      );
    }
    const hidden = await oldClient.keys.createKey({ apiId: storing, name: "not recoverable" });
    const { migrationId } = await here.service.createKeyMigration({ algorithm: "sha256" });
    const rootKeyFile = join(dir, "old-root");
    writeFileSync(rootKeyFile, `${old.rootKey}\n`);
    const args = ["import", "--from", old.baseUrl, "--from-root-key-file", rootKeyFile, "--from-api", storing];
    args.push("--into", here.baseUrl, "--into-api", here.apiId, "--migration", migrationId);
    const env = { UNKEY_ROOT_KEY: here.rootKey };

    const first = await run(args, env);
    expect(first.stderr).toMatch(/\[#+\] 4 keys read: 3 imported, 0 already here, 1 not recoverable/);
    expect(first).toMatchObject({ status: 0 });
    expect(first.stdout).toBe(
      "4 keys listed: 3 imported, 0 already here, 1 not recoverable (they move on their first request with apiKeyAuth({ migrateFrom }))\n",
    );
    const hereClient = createClient({ baseUrl: here.baseUrl, rootKey: here.rootKey, logger: silentLogger, ...GENEROUS });
    for (const [i, { key }] of made.entries()) {
      expect(await hereClient.keys.verifyKey({ key })).toMatchObject({
        valid: true,
        name: `bulk ${i}`,
        meta: { i },
        permissions: ["docs.read"],
        identity: { externalId: "customer-bulk" },
        credits: 9 + i,
      });
    }
    expect(await hereClient.keys.verifyKey({ key: hidden.key })).toMatchObject({ valid: false, code: "NOT_FOUND" });

    const again = await run(args, env);
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/^4 keys listed: 0 imported, 3 already here, 1 not recoverable/);
    for (const output of [first.stdout, first.stderr, again.stdout, again.stderr]) {
      for (const secret of [old.rootKey, here.rootKey, hidden.key, ...made.map((m) => m.key)]) expect(output).not.toContain(secret);
    }
    await Promise.all([oldClient.close(), hereClient.close()]);
  });

  it("a missing flag or root key exits 2 naming it; a service refusing exits 1", async () => {
    const missing = await run(["import", "--from", old.baseUrl, "--from-api", storing, "--into-api", here.apiId]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^keyguard import: --migration is required\./);
    const noKey = await run(["import", "--from", old.baseUrl, "--from-api", storing, "--into-api", here.apiId, "--migration", "mig_x"], {
      UNKEY_BASE_URL: here.baseUrl,
    });
    expect(noKey.status).toBe(2);
    expect(noKey.stderr).toMatch(/no root key: pass --from-root-key-file <path> or set KEYGUARD_FROM_ROOT_KEY/);
    const refused = await run(["import", "--from", old.baseUrl, "--from-api", storing, "--into-api", here.apiId, "--migration", "mig_x"], {
      UNKEY_BASE_URL: here.baseUrl,
      UNKEY_ROOT_KEY: here.rootKey,
      KEYGUARD_FROM_ROOT_KEY: "root_wrong_key_123456",
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^keyguard import: stopped: .*\(HTTP 401\)/m);
    expect(refused.stderr).not.toContain("root_wrong_key_123456");
  });
});
