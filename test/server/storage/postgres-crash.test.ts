// `kill -9` of `keyguard serve --postgres … --redis …` during a createKey + verifyKey load,
// several rounds: after each restart every acknowledged createKey still verifies, and no
// acknowledged credit comes back.
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { POSTGRES_URL, REDIS_URL, isolatedNamespace, postgresRedisSkipReason } from "../../support/postgres-redis";
import { makeCall } from "../helpers";

const skip = await postgresRedisSkipReason("kill -9 of keyguard serve on PostgreSQL + Redis");
const ROOT_KEY = `root_crash${Date.now()}_4f1c9e27b8a35d60e2b7c41f9a0d8e36`;
const ROUNDS = 3;
const LOAD_MS = 1000;
const CREDITS = 1_000_000;

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

function serve(schema: string): Promise<{ child: ChildProcess; baseUrl: string; apiId: string }> {
  const args = [
    "--import",
    "tsx",
    "src/cli.ts",
    "serve",
    "--port",
    "0",
    "--postgres",
    POSTGRES_URL,
    "--redis",
    REDIS_URL,
    "--postgres-schema",
    schema,
  ];
  const child = spawn(process.execPath, args, { env: { ...process.env, UNKEY_ROOT_KEY: ROOT_KEY }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const baseUrl = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      const apiId = /API id:\s+(api_\S+)/.exec(output)?.[1];
      if (baseUrl && apiId) {
        clearTimeout(timer);
        resolve({ child, baseUrl, apiId });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${output}`));
    });
  });
}

const exited = (child: ChildProcess): Promise<unknown> =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once("exit", r));

describe.skipIf(skip !== undefined)("kill -9 of keyguard serve on PostgreSQL + Redis", () => {
  const ns = isolatedNamespace();
  afterAll(() => ns.drop());

  it(`keeps every acknowledged createKey and spend over ${ROUNDS} crashes`, { timeout: 180_000 }, async () => {
    let served = await serve(ns.schema);
    const first = makeCall(served.baseUrl, ROOT_KEY);
    const created = await first("keys.createKey", { apiId: served.apiId, credits: { remaining: CREDITS } });
    expect(created.status).toBe(200);
    const creditsKey: { key: string; keyId: string } = created.body.data;
    const acknowledgedKeys: string[] = [];
    let acknowledgedSpends = 0;

    for (let round = 0; round < ROUNDS; round++) {
      const call = makeCall(served.baseUrl, ROOT_KEY);
      let stop = false;
      const creator = async () => {
        while (!stop) {
          const res = await call("keys.createKey", { apiId: served.apiId }).catch(() => undefined);
          if (!res) return; // the process is gone: this answer never came
          if (res.status === 200) acknowledgedKeys.push(res.body.data.key);
        }
      };
      const verifier = async () => {
        while (!stop) {
          const res = await call("keys.verifyKey", { key: creditsKey.key }).catch(() => undefined);
          if (!res) return;
          if (res.status === 200 && res.body.data.code === "VALID") acknowledgedSpends++;
        }
      };
      const workers = [creator(), creator(), verifier(), verifier(), verifier()];
      await new Promise((r) => setTimeout(r, LOAD_MS));
      served.child.kill("SIGKILL");
      stop = true;
      await Promise.all(workers);
      await exited(served.child);
      served = await serve(ns.schema);
    }

    expect(acknowledgedKeys.length).toBeGreaterThan(0);
    expect(acknowledgedSpends).toBeGreaterThan(0);
    const call = makeCall(served.baseUrl, ROOT_KEY);
    for (let i = 0; i < acknowledgedKeys.length; i += 50) {
      const batch = await Promise.all(acknowledgedKeys.slice(i, i + 50).map((key) => call("keys.verifyKey", { key })));
      for (const res of batch) expect(res.body.data.code).toBe("VALID");
    }
    const remaining = (await call("keys.getKey", { keyId: creditsKey.keyId })).body.data.credits.remaining as number;
    // No acknowledged credit came back; at most the 3 verifications in flight at each kill were charged unanswered.
    expect(remaining).toBeLessThanOrEqual(CREDITS - acknowledgedSpends);
    expect(remaining).toBeGreaterThanOrEqual(CREDITS - acknowledgedSpends - 3 * ROUNDS);
  });
});
