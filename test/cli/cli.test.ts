// The real `keyguard` CLI in a child process: serve, persist to --data (SQLite), crash (SIGKILL), restart;
// the root key from a file.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { exited, killChildren, run, serve } from "./cli-process";
import { makeCall } from "../server/helpers";

const dir = mkdtempSync(join(tmpdir(), "keyguard-cli-"));

afterEach(killChildren);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("keyguard serve", () => {
  it("keeps keys in --data across a crash and a restart", async () => {
    const dataFile = join(dir, "keys.db");
    const first = await serve(["--port", "0", "--data", dataFile]);
    expect(first.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(first.rootKey).toMatch(/^root_/);
    const call = makeCall(first.baseUrl, first.rootKey!);
    const created = await call("keys.createKey", { apiId: first.apiId, credits: { remaining: 3 } });
    expect(created.status).toBe(200);
    const { key } = created.body.data;
    expect((await call("keys.verifyKey", { key })).body.data).toMatchObject({ code: "VALID", credits: 2 });

    first.child.kill("SIGKILL"); // a crash: nothing gets a chance to flush
    await exited(first.child);

    const second = await serve(["--port", "0", "--data", dataFile]);
    expect(second.apiId).toBe(first.apiId);
    expect(second.output).toContain("earlier root keys in the data file still work");
    const again = makeCall(second.baseUrl, first.rootKey!);
    expect((await again("keys.verifyKey", { key })).body.data).toMatchObject({ valid: true, code: "VALID", credits: 1 });
    second.child.kill("SIGTERM");
    expect(await exited(second.child)).toBe(0);
  });

  it("uses --root-key without printing it", async () => {
    const served = await serve(["--port", "0", "--root-key", "root_fromTheCommandLine_4f1c9e27b8a35d60e2b7c41f9a0d8e36"]);
    expect(served.output).not.toContain("root_fromTheCommandLine_4f1c9e27b8a35d60e2b7c41f9a0d8e36");
    expect(served.output).toContain("(given with --root-key)");
    expect(served.output).toContain("in memory");
    const res = await makeCall(served.baseUrl, "root_fromTheCommandLine_4f1c9e27b8a35d60e2b7c41f9a0d8e36")("apis.getApi", {
      apiId: served.apiId,
    });
    expect(res.status).toBe(200);
  });

  it("reads the root key from the first line of --root-key-file, never printing it", async () => {
    const file = join(dir, "root-key");
    writeFileSync(file, "  root_fromAFileSecret77_4f1c9e27b8a35d60e2b7c41f9a0d8e36  \nroot_secondLineNotTheKey\n", { mode: 0o600 });
    const served = await serve(["--port", "0", "--root-key-file", file]);
    expect(served.output).not.toContain("fromAFileSecret77");
    expect(served.output).toContain("(given with --root-key-file)");
    expect(served.output).not.toContain("can be read by other users");
    const call = makeCall(served.baseUrl, "root_fromAFileSecret77_4f1c9e27b8a35d60e2b7c41f9a0d8e36");
    expect((await call("apis.getApi", { apiId: served.apiId })).status).toBe(200);
    expect((await call("apis.getApi", { apiId: served.apiId }, "root_secondLineNotTheKey")).status).toBe(401);
  });

  it("warns when the root-key file can be read by other users", async () => {
    const file = join(dir, "root-key-open");
    writeFileSync(file, "root_inAnOpenFile1234_4f1c9e27b8a35d60e2b7c41f9a0d8e36\n");
    chmodSync(file, 0o644);
    const served = await serve(["--port", "0", "--root-key-file", file]);
    expect(served.output).toContain(`warning: ${file} can be read by other users; restrict it with: chmod 600 ${file}`);
    expect(served.output).not.toContain("inAnOpenFile1234");
  });

  it("refuses a missing or empty root-key file, and --root-key together with --root-key-file", async () => {
    const empty = join(dir, "empty-key");
    writeFileSync(empty, "\n  \nroot_onTheSecondLine99\n", { mode: 0o600 });
    const cases: Array<[string[], RegExp]> = [
      [["serve", "--root-key-file", join(dir, "missing")], /cannot read --root-key-file ".*missing": no such file\./],
      [["serve", "--root-key-file", dir], /cannot read --root-key-file ".*": it is a directory\./],
      [["serve", "--root-key-file", empty], /--root-key-file ".*empty-key" is empty: put the root key on its first line\./],
      [["serve", "--root-key-file", empty, "--root-key", "root_both12345"], /with --root-key or with --root-key-file, not both/],
    ];
    const results = await Promise.all(cases.map(([args]) => run(args)));
    results.forEach((res, i) => {
      const [args, message] = cases[i]!;
      expect(res.status, args.join(" ")).toBe(2);
      expect(res.stderr).toMatch(message);
      expect(res.stderr).not.toContain("onTheSecondLine99");
      expect(res.stderr).not.toContain("root_both12345");
    });
  });

  it("never prints a root key taken from UNKEY_ROOT_KEY", async () => {
    const served = await serve(["--port", "0"], { UNKEY_ROOT_KEY: "root_productionSecret42_4f1c9e27b8a35d60e2b7c41f9a0d8e36" });
    expect(served.output).not.toContain("root_productionSecret42_4f1c9e27b8a35d60e2b7c41f9a0d8e36");
    expect(served.output).not.toContain("productionSecret");
    expect(served.output).toContain("(from UNKEY_ROOT_KEY)");
    const res = await makeCall(served.baseUrl, "root_productionSecret42_4f1c9e27b8a35d60e2b7c41f9a0d8e36")("apis.getApi", {
      apiId: served.apiId,
    });
    expect(res.status).toBe(200);
  });

  it("--key-migration registers a sha256 key migration keys.migrateKeys imports under, kept across a restart", async () => {
    const dataFile = join(dir, "migration.db");
    const first = await serve(["--port", "0", "--data", dataFile, "--key-migration", "mig_hosted"]);
    expect(first.output).toContain("key migration: mig_hosted (sha256");
    const call = makeCall(first.baseUrl, first.rootKey!);
    const hash = Buffer.from("a key of the hosted service, hashed there.").toString("base64");
    const imported = await call("keys.migrateKeys", { migrationId: "mig_hosted", apiId: first.apiId, keys: [{ hash }] });
    expect(imported.status).toBe(200);
    expect(imported.body.data.migrated).toHaveLength(1);
    // Unknown without the flag's id.
    expect((await call("keys.migrateKeys", { migrationId: "mig_other", apiId: first.apiId, keys: [{ hash }] })).status).toBe(404);
    first.child.kill("SIGTERM");
    expect(await exited(first.child)).toBe(0);
    // The same flag again after a restart: kept, not an error.
    const second = await serve(["--port", "0", "--data", dataFile, "--key-migration", "mig_hosted"]);
    expect(second.output).toContain("key migration: mig_hosted");
    const again = makeCall(second.baseUrl, first.rootKey!);
    const another = Buffer.from("another key of the hosted service, hashed.").toString("base64");
    expect((await again("keys.migrateKeys", { migrationId: "mig_hosted", apiId: second.apiId, keys: [{ hash: another }] })).status).toBe(
      200,
    );
  });

  it("--store-keys with KEYGUARD_ENCRYPTION_KEY: the API keeps recoverable keys", async () => {
    const served = await serve(["--port", "0", "--store-keys", "--trust-proxy"], { KEYGUARD_ENCRYPTION_KEY: "ab".repeat(32) });
    const call = makeCall(served.baseUrl, served.rootKey!);
    const created = await call("keys.createKey", { apiId: served.apiId, recoverable: true });
    expect(created.status).toBe(200);
    const got = await call("keys.getKey", { keyId: created.body.data.keyId, decrypt: true });
    expect(got.body.data.plaintext).toBe(created.body.data.key);
    expect(served.output).not.toContain("ab".repeat(32));
  });

  it("a metrics token too short is refused by where it came from, never echoed", async () => {
    const file = join(dir, "short-token");
    writeFileSync(file, "tok_short1\n", { mode: 0o600 });
    const fromFile = await run(["serve", "--port", "0", "--metrics", "--metrics-token-file", file]);
    const fromEnv = await run(["serve", "--port", "0", "--metrics"], { KEYGUARD_METRICS_TOKEN: "tok_short2" });
    expect([fromFile.status, fromEnv.status]).toEqual([2, 2]);
    expect(fromFile.stderr).toContain("keyguard: invalid --metrics-token-file (its content) = <hidden>. Use 16..512 printable characters");
    expect(fromEnv.stderr).toContain("keyguard: invalid KEYGUARD_METRICS_TOKEN = <hidden>. Use 16..512 printable characters");
    expect(fromFile.stderr + fromEnv.stderr).not.toMatch(/tok_short/);
  });

  it("a missing --secret-scanning-keys file or a URL of another scheme exits with code 2, naming the flag", async () => {
    const cases: Array<[string, RegExp]> = [
      [join(dir, "no-such-keys.json"), /invalid --secret-scanning-keys = ".*no-such-keys\.json"\. The file cannot be read/],
      ["ftp://example.test/keys", /invalid --secret-scanning-keys = "ftp:\/\/example\.test\/keys"\. Use an https:\/\/ or http:\/\/ URL/],
    ];
    for (const [value, message] of cases) {
      const res = await run(["serve", "--secret-scanning-keys", value]);
      expect(res.status).toBe(2);
      expect(res.stderr).toMatch(message);
    }
  });

  it("--help documents serve; bad flags exit with code 2 and a clear message", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["serve", "--port", "http"], /invalid --port = "http"\. Use a whole number 0\.\.65535 \(0 picks any free one\)\./],
      [["serve", "--nope"], /unknown flag --nope\./],
      [["launch"], /unknown command "launch"/],
      [["serve", "--port", "65536"], /invalid --port = 65536\. Use a whole number 0\.\.65535 \(0 picks any free one\)\./],
      [["serve", "--root-key", "short"], /invalid --root-key = <hidden>\. Use 8\.\.512 visible ASCII characters/],
      [["serve"], /invalid UNKEY_ROOT_KEY = <hidden>\. Use 8\.\.512/],
      [
        ["serve", "--store-keys"],
        /invalid --store-keys = true\. Storing keys needs a key-encryption key: set KEYGUARD_ENCRYPTION_KEY, .*--encryption-key-file\./,
      ],
      [
        ["serve", "--encryption-key-file", join(dir, "no-such-file")],
        /invalid --encryption-key-file = ".*no-such-file"\. The file cannot be read/,
      ],
      [["serve", "--data", " "], /invalid --data = " "\. Pass a file path/],
      [
        ["serve", "--verification-retention-days", "a week"],
        /invalid --verification-retention-days = "a week"\. Use a whole number of days/,
      ],
      [
        ["serve", "--verification-retention-days", "1.5"],
        /invalid --verification-retention-days = "1\.5"\. Use a whole number of days 1\.\.3650/,
      ],
      [["serve", "--verification-retention-days", "0"], /invalid --verification-retention-days = 0\. Use a whole number of days 1\.\.3650/],
      [
        ["serve", "--verification-retention-days", "3651"],
        /invalid --verification-retention-days = 3651\. Use a whole number of days 1\.\.3650/,
      ],
      [["serve", "--audit-retention-days", "0"], /invalid --audit-retention-days = 0\. Use a whole number of days 1\.\.3650/],
      [
        ["serve", "--webhook-expiry-notice-hours", "0"],
        /invalid --webhook-expiry-notice-hours = 0\. Use a whole number of hours 1\.\.8760/,
      ],
      [["serve", "--metrics-token-file", join(dir, "no-such-file")], /--metrics-token-file needs --metrics/],
      [["migrate", "state.json", "--data", join(dir, "x.db"), "--no-console"], /keyguard migrate takes no --no-console/],
    ];
    // The UNKEY_ROOT_KEY case takes the variable; no other case sees it.
    const [help, ...results] = await Promise.all([
      run(["--help"]),
      ...cases.map(([args]) => run(args, args.length === 1 ? { UNKEY_ROOT_KEY: "short" } : {})),
    ]);
    expect(help!.status).toBe(0);
    for (const flag of [
      "serve",
      "migrate",
      "--port",
      "--host",
      "--root-key",
      "--root-key-file",
      "--data",
      "--encryption-key-file",
      "--store-keys",
      "--trust-proxy",
      "--verification-retention-days",
      "--audit-retention-days",
      "--metrics",
      "--metrics-token-file",
      "--no-console",
      "--secret-scanning-keys",
      "--webhook-expiry-notice-hours",
    ]) {
      expect(help!.stdout).toContain(flag);
    }
    expect(help!.stdout).toMatch(/--root-key <key>.*Every user of the machine can read it in the\s+process list/s);
    results.forEach((res, i) => {
      const [args, message] = cases[i]!;
      expect(res.status, args.join(" ")).toBe(2);
      expect(res.stderr).toMatch(message);
      expect(res.stderr).not.toContain("short");
      expect(res.stderr).not.toMatch(/keyguard\/(local|server):|invalid option/);
    });
  }, 60_000); // 16 CLI processes at once: on 2 busy cores they can take longer than the default 20 s

  it("bad --invalidate-redis / --invalidate-prefix values exit with code 2, naming the flag (or variable), never the URL", async () => {
    const cases: Array<[string[], Record<string, string>, string]> = [
      [
        ["serve", "--invalidate-redis", "http://u:pw-secret@127.0.0.1:6379"],
        {},
        "invalid --invalidate-redis = <a http: URL>. Use a redis:// or rediss:// URL",
      ],
      [
        ["serve", "--invalidate-redis", "redis://127.0.0.1:6379", "--invalidate-prefix", "has space"],
        {},
        'invalid --invalidate-prefix = "has space". Use up to 64 printable ASCII characters without spaces, e.g. "keyguard:".',
      ],
      [
        ["serve", "--invalidate-redis", "redis://127.0.0.1:6379", "--invalidate-prefix", "p".repeat(65)],
        {},
        'invalid --invalidate-prefix = "ppp',
      ],
      [
        ["serve"],
        { KEYGUARD_INVALIDATE_REDIS_URL: "https://u:pw-secret@cache" },
        "invalid KEYGUARD_INVALIDATE_REDIS_URL = <a https: URL>. Use a redis:// or rediss:// URL",
      ],
      [
        ["serve", "--postgres", "postgres://127.0.0.1:1/x", "--redis", "http://u:pw-secret@cache"],
        {},
        "invalid --redis = <a http: URL>. Use a redis:// or rediss:// URL",
      ],
    ];
    const results = await Promise.all(cases.map(([args, env]) => run([...args, "--no-console", "--port", "0"], env)));
    results.forEach((res, i) => {
      const [args, , message] = cases[i]!;
      expect(res.status, args.join(" ")).toBe(2);
      expect(res.stderr).toContain(`keyguard: ${message}`);
      expect(res.stderr).not.toContain("pw-secret");
      expect(res.stderr).not.toMatch(/redisStore:|option (url|prefix)/);
    });
  });

  it("migrate refuses every flag of serve; flags without a command exit 2; bare keyguard and --help print the usage", async () => {
    const serveOnly: string[][] = [
      ["--encryption-key-file", join(dir, "no-such-file")],
      ["--store-keys"],
      ["--trust-proxy"],
      ["--invalidate-redis", "redis://127.0.0.1:6379"],
      ["--invalidate-prefix", "zz"],
      ["--metrics"],
    ];
    const migrations = await Promise.all(
      serveOnly.map((flag) => run(["migrate", join(dir, "state.json"), "--data", join(dir, "m.db"), ...flag])),
    );
    migrations.forEach((res, i) => {
      expect(res.status, serveOnly[i]!.join(" ")).toBe(2);
      expect(res.stderr).toContain(`keyguard migrate takes no ${serveOnly[i]![0]}.`);
    });
    const [bare, help, noCommand, secret] = await Promise.all([
      run([]),
      run(["-h"]),
      run(["--data", join(dir, "x.db")]),
      run(["--root-key", "root_noCommandSecret1"]),
    ]);
    expect([bare.status, help.status]).toEqual([0, 0]);
    expect(bare.stdout).toContain("Usage: keyguard serve [options]");
    expect(help.stdout).toBe(bare.stdout);
    expect(noCommand.status).toBe(2);
    expect(noCommand.stdout).toBe("");
    expect(noCommand.stderr).toContain('keyguard: no command given with --data: put "serve" or "migrate" first');
    expect(secret.status).toBe(2);
    expect(secret.stderr).toContain("no command given with --root-key:");
    expect(secret.stderr).not.toContain("noCommandSecret1");
  });
});
