// The README shows how to make the first key for the app it protects: its script runs as written
// (with keyguard/client resolving to the source) against a key service, and the key it prints verifies.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createClient } from "keyguard/client";
import { startLocalKeyService, type RunningLocalKeyService } from "keyguard/server";
import { silentLogger } from "../../src/logger";
import { GENEROUS } from "../support/time-limits";
import { ROOT, parse, readMarkdown } from "./markdown";

let keys: RunningLocalKeyService;
beforeAll(async () => {
  keys = await startLocalKeyService({ logger: silentLogger });
}, 30_000);
afterAll(() => keys.close());

it("the README's script for the first key makes a key that verifies", { timeout: 60_000 }, async () => {
  const blocks = parse(readMarkdown("README.md")).fences.filter((f) => f.code.includes("make-key.ts"));
  expect(blocks).toHaveLength(1);
  const code = blocks[0]!.code.replace('from "keyguard/client"', `from ${JSON.stringify(join(ROOT, "src/client.ts"))}`);
  const work = await mkdtemp(join(tmpdir(), "keyguard-readme-"));
  try {
    // .mts: an ES module (top-level await) outside this package.
    const script = join(work, "make-key.mts");
    await writeFile(script, code);
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", script], {
      cwd: ROOT,
      timeout: 50_000,
      env: { ...process.env, UNKEY_ROOT_KEY: keys.rootKey, UNKEY_BASE_URL: keys.baseUrl, API_ID: keys.apiId },
    });
    const key = stdout.trim();
    expect(key).toMatch(/^sk_\S+$/);
    const client = createClient({ rootKey: keys.rootKey, baseUrl: keys.baseUrl, logger: silentLogger, ...GENEROUS });
    await expect(client.keys.verifyKey({ key })).resolves.toMatchObject({ valid: true, code: "VALID", name: "first caller" });
    await client.close();
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});
