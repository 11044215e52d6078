// POST /secret-scanning/github: GitHub's secret scanning partner protocol on the key service, with
// a signing key made here (node:crypto) and its public keys in a file or served by a local HTTP
// server. Reported keys are disabled or flagged by their API's leakResponse; bad signatures,
// unknown key ids, replays, oversized and malformed reports are refused; tokens are never echoed.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createLocalKeyService, LocalServiceConfigError } from "keyguard/server";
import type { InvalidationMessage } from "../../../src/protocol/invalidation";
import { manualClock, start, type Started } from "../helpers";
import {
  keysDocument,
  reportBody,
  scanningKey,
  sendReport,
  signedHeaders,
  tokenHash,
  writeKeysDocument,
} from "../../support/secret-scanning-host";

const host = scanningKey();
const stranger = scanningKey();
let dir: string;
let keysFile: string;
const running: Started[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "keyguard-scanning-"));
  keysFile = writeKeysDocument(join(dir, "keys.json"), [host]);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

/** Log lines written by the service, as text. */
function capturingLogger() {
  const lines: string[] = [];
  const log = (fields: unknown, msg?: string) => void lines.push(`${msg ?? ""} ${JSON.stringify(fields)}`);
  return { lines, logger: { warn: log, error: log, info: log, debug: log } };
}

async function service(options: Parameters<typeof start>[0] = {}): Promise<Started> {
  const s = await start({ secretScanning: { publicKeys: keysFile }, ...options });
  running.push(s);
  return s;
}

/** The key as getKey answers it, with its settings (its leak reports) from keyguard's keys.getKeySettings. */
async function getKey(s: Started, keyId: string) {
  const res = await s.call("keys.getKey", { keyId });
  expect(res.status).toBe(200);
  expect(res.body.data).not.toHaveProperty("leakReports");
  const settings = await s.call("keys.getKeySettings", { keyIds: [keyId] });
  expect(settings.status).toBe(200);
  return { ...res.body.data, ...settings.body.data[0] };
}

describe("reports of keys", () => {
  it("disables a reported key by default, records the report, labels it true_positive; others false_positive", async () => {
    const clock = manualClock();
    const published: InvalidationMessage[] = [];
    const s = await service({ now: clock.now, invalidate: { invalidate: async (m) => void published.push(m) } });
    const leaked = await s.createKey({ name: "leaked" });
    const other = await s.createKey({ name: "other" });
    const body = reportBody([
      { token: leaked.key, url: "https://github.com/octo/repo/blob/abc/.env", source: "commit" },
      { token: "sk_notOneOfOurs123", type: "other_type" },
    ]);
    const res = await sendReport(s.baseUrl, host, body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { token_hash: tokenHash(leaked.key), token_type: "keyguard_api_key", label: "true_positive" },
      { token_hash: tokenHash("sk_notOneOfOurs123"), token_type: "other_type", label: "false_positive" },
    ]);
    expect(res.text).not.toContain(leaked.key);

    expect(await s.verify(leaked.key)).toMatchObject({ valid: false, code: "DISABLED" });
    expect(await s.verify(other.key)).toMatchObject({ valid: true, code: "VALID" });
    const info = await getKey(s, leaked.keyId);
    expect(info.enabled).toBe(false);
    expect(info.leakReports).toEqual([
      { reportedAt: clock.t, type: "keyguard_api_key", url: "https://github.com/octo/repo/blob/abc/.env", source: "commit" },
    ]);
    expect((await getKey(s, other.keyId)).leakReports).toBeUndefined();
    const listed = await s.call("apis.listKeys", { apiId: s.apiId });
    const row = listed.body.data.find((k: { keyId: string }) => k.keyId === leaked.keyId);
    // listKeys answers production's shape; the reports are keyguard's keys.getKeySettings'.
    expect(row).not.toHaveProperty("leakReports");
    const settings = await s.call("keys.getKeySettings", { keyIds: [leaked.keyId, other.keyId] });
    expect(settings.body.data.map((k: { leakReports?: unknown[] }) => k.leakReports?.length)).toEqual([1, undefined]);
    // apiKeyAuth() fleets forget the disabled key at once.
    expect(published).toContainEqual(expect.objectContaining({ kind: "key" }));
    // The audit log tells it, with the host as the actor; never the key.
    const history = await s.call("audit.listEvents", { targetId: leaked.keyId, operation: "secretScanning.report" });
    expect(history.body.data).toEqual([
      expect.objectContaining({
        actorId: "github-secret-scanning",
        outcome: "success",
        targets: [leaked.keyId, s.apiId],
        change: { leakResponse: "disable", type: "keyguard_api_key", source: "commit", url: "https://github.com/octo/repo/blob/abc/.env" },
      }),
    ]);
    expect(JSON.stringify(history.body)).not.toContain(leaked.key);
  });

  it('only flags a key of an API created with leakResponse "flag": it still verifies', async () => {
    const s = await service();
    const created = await s.call("apis.createApi", { name: "flag-only", leakResponse: "flag" });
    expect(created.status).toBe(200);
    const apiId = created.body.data.apiId;
    const key = await s.createKey({ apiId });
    const res = await sendReport(s.baseUrl, host, reportBody([{ token: key.key }]));
    expect(res.body).toEqual([expect.objectContaining({ label: "true_positive" })]);
    expect(await s.verify(key.key)).toMatchObject({ valid: true, code: "VALID" });
    const info = await getKey(s, key.keyId);
    expect(info.enabled).toBe(true);
    expect(info.leakReports).toEqual([expect.objectContaining({ source: "content" })]);
  });

  it('disables a key of an API created with leakResponse "disable"; refuses another leakResponse', async () => {
    const s = await service();
    const apiId = (await s.call("apis.createApi", { name: "disable-api", leakResponse: "disable" })).body.data.apiId;
    const key = await s.createKey({ apiId });
    await sendReport(s.baseUrl, host, reportBody([{ token: key.key }]));
    expect(await s.verify(key.key)).toMatchObject({ code: "DISABLED" });
    const bad = await s.call("apis.createApi", { name: "bad-api", leakResponse: "revoke" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.errors[0].location).toBe("body.leakResponse");
  });

  it("takes leakResponse on the admin surface's createApi too", async () => {
    const s = await service();
    const { apiId } = await s.service.createApi({ name: "admin-flag", leakResponse: "flag" });
    const key = await s.createKey({ apiId });
    await sendReport(s.baseUrl, host, reportBody([{ token: key.key }]));
    expect(await s.verify(key.key)).toMatchObject({ code: "VALID" });
    await expect(s.service.createApi({ name: "admin-bad", leakResponse: "revoke" as never })).rejects.toThrow(
      'createApi: leakResponse must be "disable" or "flag".',
    );
  });

  it("keeps the latest 20 reports of a key; a rerolled key starts without them", async () => {
    const clock = manualClock();
    const s = await service({ now: clock.now });
    const key = await s.createKey();
    for (let i = 0; i < 22; i++) {
      clock.advance(1000);
      const res = await sendReport(s.baseUrl, host, reportBody([{ token: key.key, url: `https://example.test/${i}` }]));
      expect(res.status).toBe(200);
    }
    const reports = (await getKey(s, key.keyId)).leakReports as Array<{ url: string }>;
    expect(reports).toHaveLength(20);
    expect(reports[0]!.url).toBe("https://example.test/2");
    expect(reports[19]!.url).toBe("https://example.test/21");
    const rerolled = await s.call("keys.rerollKey", { keyId: key.keyId, expiration: 0 });
    expect((await getKey(s, rerolled.body.data.keyId)).leakReports).toBeUndefined();
  });

  it("never writes a token to the log, an answer or a stored report (a URL holding it is redacted)", async () => {
    const { lines, logger } = capturingLogger();
    const s = await service({ logger });
    const key = await s.createKey();
    const res = await sendReport(s.baseUrl, host, reportBody([{ token: key.key, url: `https://gist.test/raw?k=${key.key}` }]));
    expect(res.status).toBe(200);
    const info = await getKey(s, key.keyId);
    expect(info.leakReports[0].url).toBe("https://gist.test/raw?k=[redacted]");
    expect(lines.some((l) => l.includes(key.keyId))).toBe(true);
    expect(lines.join("\n")).not.toContain(key.key);
    const bad = await sendReport(s.baseUrl, host, JSON.stringify([{ token: key.key, type: 7 }]));
    expect(bad.status).toBe(400);
    expect(bad.text).not.toContain(key.key);
    expect(JSON.stringify(await s.service.exportState())).not.toContain(key.key);
  });
});

describe("refused reports", () => {
  it("refuses a bad signature, a changed body, an unknown key id and missing headers with the same 401", async () => {
    const s = await service();
    const key = await s.createKey();
    const body = reportBody([{ token: key.key }]);
    const forged = await sendReport(s.baseUrl, stranger, body, { "Github-Public-Key-Identifier": host.id });
    const changed = await sendReport(s.baseUrl, host, body, {
      "Github-Public-Key-Signature": signedHeaders(host, `${body} `)["Github-Public-Key-Signature"]!,
    });
    const unknownId = await sendReport(s.baseUrl, stranger, body);
    const garbage = await sendReport(s.baseUrl, host, body, { "Github-Public-Key-Signature": "bm90IGEgc2lnbmF0dXJlIGF0IGFsbA==" });
    const bare = await fetch(`${s.baseUrl}/secret-scanning/github`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const details = new Set<string>();
    for (const res of [forged, changed, unknownId, garbage, { status: bare.status, body: await bare.json(), text: "" }]) {
      expect(res.status).toBe(401);
      const error = (res.body as { error: { detail: string } }).error;
      details.add(error.detail);
      expect(JSON.stringify(res.body)).not.toContain(key.key);
    }
    expect([...details]).toEqual(["The report's signature could not be verified."]);
    expect(await s.verify(key.key)).toMatchObject({ code: "VALID" });
    expect((await getKey(s, key.keyId)).leakReports).toBeUndefined();
  });

  it("refuses the same signed report twice (409) within the window, and takes it again after", async () => {
    const clock = manualClock();
    const s = await service({ now: clock.now });
    const key = await s.createKey();
    const body = reportBody([{ token: key.key }]);
    expect((await sendReport(s.baseUrl, host, body)).status).toBe(200);
    const replayed = await sendReport(s.baseUrl, host, body);
    expect(replayed.status).toBe(409);
    clock.advance(23 * 60 * 60 * 1000);
    expect((await sendReport(s.baseUrl, host, body)).status).toBe(409);
    expect((await getKey(s, key.keyId)).leakReports).toHaveLength(1);
    clock.advance(60 * 60 * 1000);
    expect((await sendReport(s.baseUrl, host, body)).status).toBe(200);
    expect((await getKey(s, key.keyId)).leakReports).toHaveLength(2);
  });

  it("refuses oversized reports with 413: more than 1 MB, more than 1,000 entries", async () => {
    const s = await service();
    const big = JSON.stringify([{ token: "x", type: "t", url: "u".repeat(1024 * 1024), source: "content" }]);
    expect((await sendReport(s.baseUrl, host, big)).status).toBe(413);
    const many = reportBody(Array.from({ length: 1001 }, (_, i) => ({ token: `tok_${i}` })));
    const res = await sendReport(s.baseUrl, host, many);
    expect(res.status).toBe(413);
    expect(JSON.stringify(res.body)).toContain("1000 entries");
    const limit = reportBody(Array.from({ length: 1000 }, (_, i) => ({ token: `tok_${i}` })));
    const ok = await sendReport(s.baseUrl, host, limit);
    expect(ok.status).toBe(200);
    expect(ok.body).toHaveLength(1000);
  });

  it("refuses malformed signed bodies with 400 naming the entry, and does not remember them", async () => {
    const s = await service();
    const cases = [
      "not json",
      JSON.stringify({ token: "a" }),
      JSON.stringify(["a"]),
      JSON.stringify([{ type: "t", url: "u" }]),
      JSON.stringify([{ token: "", type: "t" }]),
      JSON.stringify([{ token: "a", url: "u" }]),
      '[{"token":"a","type":"t","url":"https://x.test/\\ud800"}]',
      '[{"token":"a","type":"t\\u0000","url":""}]',
    ];
    for (const body of cases) {
      const res = await sendReport(s.baseUrl, host, body);
      expect(res.status, body).toBe(400);
      expect((res.body as { error: { detail: string } }).error.detail).toMatch(/^Invalid report: /);
      expect((await sendReport(s.baseUrl, host, body)).status, `${body} again`).toBe(400);
    }
  });

  it("refuses every malformed token docs/security.md names with 400, never quoting it", async () => {
    const s = await service();
    const tokens = [
      // JSON escapes in the body's text: the parsed token holds the character itself.
      "tok_with_a_nul\\u0000_inside",
      "tok_lone_high_\\ud800",
      "tok_lone_low_\\udc00_end",
      "\\u0000",
      "\\udfff\\ud800",
    ];
    for (const token of tokens) {
      const body = `[{"token":"${token}","type":"t","url":""}]`;
      const res = await sendReport(s.baseUrl, host, body);
      expect(res.status, body).toBe(400);
      expect(res.text, body).not.toContain("tok_");
      expect((res.body as { error: { detail: string } }).error.detail, body).toMatch(/^Invalid report: entry 0: "token" holds a NUL/);
    }
    const others = [
      JSON.stringify([{ token: 12, type: "t" }]),
      JSON.stringify([{ token: null, type: "t" }]),
      JSON.stringify([{ token: ["tok_in_an_array"], type: "t" }]),
      JSON.stringify([{ token: "x".repeat(4097), type: "t" }]),
      JSON.stringify([{ token: "tok_ok", type: "t".repeat(257) }]),
      JSON.stringify([{ token: "tok_ok", type: "t", url: "u".repeat(4097) }]),
      JSON.stringify([{ token: "tok_ok", type: "t", source: "s".repeat(65) }]),
      '[{"token":"tok_ok","type":"t"},{"token":"tok_second\\u0000","type":"t"}]',
    ];
    for (const body of others) {
      const res = await sendReport(s.baseUrl, host, body);
      expect(res.status, body.slice(0, 120)).toBe(400);
      expect(res.text).not.toContain("tok_in_an_array");
      expect(res.text).not.toContain("tok_second");
    }
  });

  it("is counted in the metrics as secret_scanning, the token nowhere in the scrape", async () => {
    const s = await service({ metrics: { processMetrics: false } });
    const key = await s.createKey();
    expect((await sendReport(s.baseUrl, host, reportBody([{ token: key.key }]))).status).toBe(200);
    expect((await sendReport(s.baseUrl, stranger, reportBody([{ token: key.key }]))).status).toBe(401);
    const text = await (await fetch(`${s.baseUrl}/metrics`)).text();
    expect(text).toMatch(/keyguard_requests_total\{operation="secret_scanning",status="200"\} 1/);
    expect(text).toMatch(/keyguard_requests_total\{operation="secret_scanning",status="401"\} 1/);
    expect(text).not.toContain(key.key);
  });

  it("answers 405 to another method and 404 when secret scanning is off", async () => {
    const s = await service();
    const get = await fetch(`${s.baseUrl}/secret-scanning/github`);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    const off = await start();
    running.push(off);
    const res = await sendReport(off.baseUrl, host, reportBody([{ token: "x" }]));
    expect(res.status).toBe(404);
  });
});

describe("public keys at a URL", () => {
  let server: Server;
  let url: string;
  let document = keysDocument([host]);
  let status = 200;
  let fetches = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      fetches++;
      res.writeHead(status, { "content-type": "application/json" });
      res.end(status === 200 ? document : "{}");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/meta/public_keys/secret_scanning`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("fetches the keys when first needed, keeps them, fetches again for a new key id at most once a minute", async () => {
    const clock = manualClock();
    document = keysDocument([host]);
    status = 200;
    fetches = 0;
    const s = await service({ now: clock.now, secretScanning: { publicKeys: url } });
    expect(fetches).toBe(0);
    const key = await s.createKey();
    expect((await sendReport(s.baseUrl, host, reportBody([{ token: key.key, url: "a" }]))).status).toBe(200);
    expect((await sendReport(s.baseUrl, host, reportBody([{ token: key.key, url: "b" }]))).status).toBe(200);
    expect(fetches).toBe(1);

    // The host rotates its key: a report signed with the new one makes the service fetch again.
    clock.advance(61_000);
    const rotated = scanningKey();
    document = keysDocument([rotated, host]);
    expect((await sendReport(s.baseUrl, rotated, reportBody([{ token: key.key, url: "c" }]))).status).toBe(200);
    expect(fetches).toBe(2);
    // Unknown ids within the minute do not fetch again.
    for (let i = 0; i < 5; i++)
      expect((await sendReport(s.baseUrl, stranger, reportBody([{ token: key.key, url: `d${i}` }]))).status).toBe(401);
    expect(fetches).toBe(2);
    clock.advance(60_000);
    expect((await sendReport(s.baseUrl, stranger, reportBody([{ token: key.key, url: "e" }]))).status).toBe(401);
    expect(fetches).toBe(3);
    expect((await getKey(s, key.keyId)).leakReports).toHaveLength(3);
    // A copy a day old is fetched again before use, even for a key id it holds.
    clock.advance(24 * 60 * 60 * 1000);
    expect((await sendReport(s.baseUrl, host, reportBody([{ token: key.key, url: "f" }]))).status).toBe(200);
    expect(fetches).toBe(4);
  });

  it("answers 503 while the keys cannot be fetched, and logs why without the URL's query", async () => {
    const clock = manualClock();
    status = 500;
    fetches = 0;
    const { lines, logger } = capturingLogger();
    const s = await service({ now: clock.now, logger, secretScanning: { publicKeys: `${url}?token=secretish` } });
    const res = await sendReport(s.baseUrl, host, reportBody([{ token: "x" }]));
    expect(res.status).toBe(503);
    expect(lines.join("\n")).toContain("answered 500");
    expect(lines.join("\n")).not.toContain("secretish");
    status = 200;
    document = keysDocument([host]);
    // Not fetched again within the minute; then the report is taken.
    expect((await sendReport(s.baseUrl, host, reportBody([{ token: "y" }]))).status).toBe(503);
    expect(fetches).toBe(1);
    clock.advance(60_000);
    expect((await sendReport(s.baseUrl, host, reportBody([{ token: "z" }]))).status).toBe(200);
  });
});

describe("public keys in a file", () => {
  it("reads the file again for a new key id (at most once a minute): a rotated key is taken", async () => {
    const clock = manualClock();
    const file = writeKeysDocument(join(dir, "rotating.json"), [host]);
    const s = await service({ now: clock.now, secretScanning: { publicKeys: file } });
    const rotated = scanningKey();
    const body = reportBody([{ token: "x" }]);
    expect((await sendReport(s.baseUrl, rotated, body)).status).toBe(401);
    writeKeysDocument(file, [rotated, host]);
    expect((await sendReport(s.baseUrl, rotated, body)).status).toBe(401);
    clock.advance(60_000);
    expect((await sendReport(s.baseUrl, rotated, body)).status).toBe(200);
  });
});

describe("the secretScanning option", () => {
  it("refuses a missing file, a file that is not a keys document, and a URL of another scheme", async () => {
    const bad = writeKeysDocument(join(dir, "bad.json"), []);
    for (const publicKeys of [join(dir, "missing.json"), bad, "ftp://example.test/keys", ""]) {
      const err = await createLocalKeyService({ secretScanning: { publicKeys } }).catch((e: unknown) => e);
      expect(err, publicKeys).toBeInstanceOf(LocalServiceConfigError);
      expect((err as LocalServiceConfigError).option).toBe("secretScanning.publicKeys");
    }
    const err = await createLocalKeyService({ secretScanning: { publicKeys: keysFile, keys: 1 } as never }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LocalServiceConfigError);
  });
});
