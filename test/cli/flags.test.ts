// Every flag of every command, from `keyguard --help`: a bad value, a missing value (or a value
// given to a switch), an unknown or repeated flag each exit 2 with one line in keyguard's own words
// naming the flag, never Node.js's parser text. A flag added to the help without a row here fails.
// And `keyguard --version`.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { killChildren, run } from "./cli-process";

const dir = mkdtempSync(join(tmpdir(), "keyguard-flags-"));
const missing = join(dir, "no-such-file");
afterEach(killChildren);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Per flag: arguments with a bad value (after `serve`, unless they name the command) and what the message says. */
const BAD: Record<string, Array<[string[], RegExp]>> = {
  "--port": [
    [["--port", "abc"], /^keyguard: invalid --port = "abc"\. Use a whole number 0\.\.65535 \(0 picks any free one\)\.$/m],
    [["--port", "70000"], /^keyguard: invalid --port = 70000\. Use a whole number 0\.\.65535 \(0 picks any free one\)\.$/m],
    [["--port", "-1"], /^keyguard: invalid --port = "-1"\. Use a whole number 0\.\.65535 \(0 picks any free one\)\.$/m],
  ],
  "--host": [
    [["--host", "no-such-host.invalid"], /^keyguard: invalid --host = "no-such-host\.invalid": no such host \(ENOTFOUND|EAI_AGAIN\)/m],
    [["--host", "192.0.2.1"], /^keyguard: invalid --host = "192\.0\.2\.1": not an address of this machine \(EADDRNOTAVAIL\)/m],
  ],
  "--root-key": [[["--root-key", "s3cr"], /^keyguard: invalid --root-key = <hidden>\. Use 8\.\.512 visible ASCII/m]],
  "--root-key-file": [[["--root-key-file", missing], /^keyguard: cannot read --root-key-file ".*": no such file\./m]],
  "--data": [[["--data", " "], /^keyguard: invalid --data = " "\. Pass a file path/m]],
  "--encryption-key-file": [
    [["--encryption-key-file", missing], /^keyguard: invalid --encryption-key-file = ".*"\. The file cannot be read/m],
  ],
  "--store-keys": [[["--store-keys"], /^keyguard: invalid --store-keys = true\. Storing keys needs a key-encryption key/m]],
  "--trust-proxy": [[["--trust-proxy=yes"], /^keyguard: --trust-proxy takes no value\.$/m]],
  "--metrics": [[["--metrics=1"], /^keyguard: --metrics takes no value\.$/m]],
  "--metrics-token-file": [[["--metrics-token-file", missing], /^keyguard: --metrics-token-file needs --metrics\.$/m]],
  "--no-console": [[["--no-console=true"], /^keyguard: --no-console takes no value\.$/m]],
  "--verification-retention-days": [
    [
      ["--verification-retention-days", "a week"],
      /^keyguard: invalid --verification-retention-days = "a week"\. Use a whole number of days 1\.\.3650/m,
    ],
    [
      ["--verification-retention-days", "0"],
      /^keyguard: invalid --verification-retention-days = 0\. Use a whole number of days 1\.\.3650/m,
    ],
  ],
  "--audit-retention-days": [
    [["--audit-retention-days", "-3"], /^keyguard: invalid --audit-retention-days = "-3"\. Use a whole number of days 1\.\.3650/m],
  ],
  "--webhooks-allow-private": [[["--webhooks-allow-private=no"], /^keyguard: --webhooks-allow-private takes no value\.$/m]],
  "--webhook-retry-hours": [
    [["--webhook-retry-hours", "169"], /^keyguard: invalid --webhook-retry-hours = 169\. Use a whole number of hours 1\.\.168/m],
  ],
  "--webhook-lease-seconds": [
    [["--webhook-lease-seconds", "10"], /^keyguard: invalid --webhook-lease-seconds = 10\. Use a whole number of seconds 15\.\.3600/m],
  ],
  "--webhook-expiry-notice-hours": [
    [
      ["--webhook-expiry-notice-hours", "2.5"],
      /^keyguard: invalid --webhook-expiry-notice-hours = "2\.5"\. Use a whole number of hours 1\.\.8760/m,
    ],
  ],
  "--secret-scanning-keys": [
    [["--secret-scanning-keys", missing], /^keyguard: invalid --secret-scanning-keys = ".*"\. The file cannot be read/m],
  ],
  "--postgres": [[["--postgres", "postgres://u:pw1@db/x"], /^keyguard: invalid --postgres = <a URL, hidden>\. Pass --redis/m]],
  "--redis": [[["--redis", "redis://cache"], /^keyguard: invalid --redis = <a URL, hidden>\. Pass --postgres/m]],
  "--postgres-schema": [
    [["--postgres-schema", "other"], /^keyguard: invalid --postgres-schema = "other"\. It applies only with --postgres/m],
  ],
  "--redis-ca-file": [[["--redis-ca-file", missing], /^keyguard: invalid --redis-ca-file = ".*"\. It applies only with --postgres/m]],
  "--redis-cluster": [[["--redis-cluster"], /^keyguard: invalid --redis-cluster = true\. It applies only with --postgres/m]],
  "--root-key-failure-limit": [
    [["--root-key-failure-limit", "many"], /^keyguard: invalid --root-key-failure-limit = "many"\. Use a whole number 1\.\.1000000/m],
    [["--root-key-failure-limit", "1000001"], /^keyguard: invalid --root-key-failure-limit = 1000001\. Use a whole number 1\.\.1000000/m],
  ],
  "--drain-timeout": [
    [["--drain-timeout", "-1"], /^keyguard: invalid --drain-timeout = "-1"\. Use a whole number of seconds 0\.\.600\.$/m],
    [["--drain-timeout", "601"], /^keyguard: invalid --drain-timeout = 601\. Use a whole number of seconds 0\.\.600\.$/m],
  ],
  "--invalidate-redis": [
    [
      ["--invalidate-redis", "http://cache"],
      /^keyguard: invalid --invalidate-redis = <a http: URL>\. Use a redis:\/\/ or rediss:\/\/ URL/m,
    ],
  ],
  "--invalidate-prefix": [[["--invalidate-prefix", "p:"], /^keyguard: --invalidate-prefix needs --invalidate-redis \(or --redis\)\.$/m]],
  "--tls-cert": [
    [
      ["--tls-cert", missing, "--tls-key", missing],
      /^keyguard: invalid --tls-cert = ".*no-such-file"\. The file cannot be read \(ENOENT\)\.$/m,
    ],
    [["--tls-cert", missing], /^keyguard: --tls-cert needs --tls-key: the certificate's private key\.$/m],
  ],
  "--tls-key": [[["--tls-key", missing], /^keyguard: --tls-key needs --tls-cert/m]],
  "--key-migration": [[["--key-migration", "x"], /invalid --key-migration\. Use an id of 3 to 255/]],
  "--tls-client-ca": [[["--tls-client-ca", missing], /^keyguard: --tls-client-ca needs --tls-cert and --tls-key/m]],
  "--help": [[["--help=1"], /^keyguard: --help takes no value\.$/m]],
  "--version": [[["--version=1"], /^keyguard: --version takes no value\.$/m]],
};

/** The flags `keyguard --help` lists. */
async function helpFlags(): Promise<{ flags: string[]; takesValue: Set<string> }> {
  const help = await run(["--help"]);
  expect(help.status).toBe(0);
  const rows = [...help.stdout.matchAll(/^\s+(?:-\w, )?(--[a-z-]+)( <[^>]+>)?/gm)];
  return { flags: rows.map((m) => m[1]!), takesValue: new Set(rows.filter((m) => m[2] !== undefined).map((m) => m[1]!)) };
}

/** Runs `cases` a few at a time (each a child process). */
async function runAll(cases: string[][]): Promise<Array<Awaited<ReturnType<typeof run>>>> {
  const results: Array<Awaited<ReturnType<typeof run>>> = [];
  for (let i = 0; i < cases.length; i += 6) results.push(...(await Promise.all(cases.slice(i, i + 6).map((args) => run(args)))));
  return results;
}

function expectRefused(res: Awaited<ReturnType<typeof run>>, args: string[], flag: string, message?: RegExp): void {
  const what = args.join(" ");
  expect(res.status, what).toBe(2);
  expect(res.stdout, what).toBe("");
  expect(res.stderr, what).toMatch(/^keyguard: /);
  expect(res.stderr, what).toContain(flag);
  if (message) expect(res.stderr, what).toMatch(message);
  // Node.js's parser and the library's own wording stay out.
  expect(res.stderr, what).not.toMatch(
    /ERR_PARSE_ARGS|Unknown option '|argument is ambiguous|argument missing|invalid option|keyguard\/server:/,
  );
  expect(res.stderr, what).not.toMatch(/pw1|s3cr/);
}

describe("every flag of every command", () => {
  it("a bad value of each flag exits 2 with keyguard's message naming it", async () => {
    const { flags } = await helpFlags();
    expect(flags.length).toBeGreaterThan(25);
    // Every flag of the help has its rows, and the rows name no flag the help lacks.
    expect(new Set(Object.keys(BAD))).toEqual(new Set(flags));
    const cases = Object.entries(BAD).flatMap(([flag, rows]) =>
      rows.map(([args, message]) => ({ flag, args: ["serve", ...args], message })),
    );
    const results = await runAll(cases.map((c) => c.args));
    results.forEach((res, i) => expectRefused(res, cases[i]!.args, cases[i]!.flag, cases[i]!.message));
  }, 300_000);

  it("each flag that takes a value, given none (last, or followed by a flag), exits 2 naming it", async () => {
    const { takesValue } = await helpFlags();
    const cases = [...takesValue].flatMap((flag) => [
      ["serve", flag],
      ["serve", flag, "--no-console"],
    ]);
    const results = await runAll(cases);
    results.forEach((res, i) => {
      const flag = cases[i]![1]!;
      expectRefused(res, cases[i]!, flag, new RegExp(`^keyguard: ${flag} needs a value: ${flag} <[^>]+>\\.$`, "m"));
    });
    // migrate's flag, the same way.
    const migrate = await run(["migrate", join(dir, "state.json"), "--data"]);
    expectRefused(migrate, ["migrate", "--data"], "--data", /^keyguard: --data needs a value: --data <file\.db>\.$/m);
  }, 300_000);

  it("an unknown flag (with a suggestion), a repeated flag, a one-dash long flag exit 2 in keyguard's words", async () => {
    const cases: Array<[string[], string, RegExp]> = [
      [["serve", "--drain-timout", "1"], "--drain-timout", /^keyguard: unknown flag --drain-timout \(did you mean --drain-timeout\?\)\.$/m],
      [["serve", "--nope"], "--nope", /^keyguard: unknown flag --nope\.$/m],
      [["serve", "--port", "1", "--port", "2"], "--port", /^keyguard: --port is given twice\.$/m],
      [["serve", "-x"], "-x", /^keyguard: unknown flag -x; the short flags are -h \(--help\) and -v \(--version\)\.$/m],
      [["serve", "-port", "1"], "-port", /^keyguard: unknown flag -port: flags longer than one letter start with two dashes/m],
      [["migrate", "state.json", "--data", "x.db", "--port", "1"], "--port", /^keyguard: keyguard migrate takes no --port\.$/m],
    ];
    const results = await runAll(cases.map(([args]) => args));
    results.forEach((res, i) => expectRefused(res, cases[i]![0], cases[i]![1], cases[i]![2]));
  }, 120_000);
});

describe("keyguard --version", () => {
  it("prints the version of package.json, with --version and -v, and is in the help", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    const [long, short, help] = await Promise.all([run(["--version"]), run(["-v"]), run(["--help"])]);
    expect(long).toMatchObject({ status: 0, stdout: `keyguard ${version}\n`, stderr: "" });
    expect(short).toMatchObject({ status: 0, stdout: `keyguard ${version}\n` });
    expect(help.stdout).toMatch(/-v, --version\s+print keyguard's version/);
  });
});
