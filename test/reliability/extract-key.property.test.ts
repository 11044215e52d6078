// Property tests of key extraction over arbitrary header values: `extractKey` against a reference
// model of the documented rules, and end to end through a real Express app and local service.
import type { Server } from "node:http";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import express from "express";
import request from "supertest";
import { apiKeyAuth, extractKey, getApiKey, MAX_KEY_LENGTH, silentLogger, type ExtractOptions, type Extraction } from "keyguard";
import { startLocal, type LocalFixture } from "./support";
import { GENEROUS } from "../support/time-limits";

const OPTIONS: ExtractOptions = { bearer: true, header: "x-api-key", headerLabel: "X-API-Key" };
const B64TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/";
const IS_B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const TCHAR = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

type Part = { kind: "none" } | { kind: "malformed" } | { kind: "key"; key: string };

/** The documented rules, written independently of the implementation: split at the first space. */
function referenceBearer(values: readonly string[]): Part {
  if (values.length === 0) return { kind: "none" };
  if (values.length > 1 || values[0] === "") return { kind: "malformed" };
  const value = values[0]!;
  const space = value.indexOf(" ");
  const scheme = space === -1 ? value : value.slice(0, space);
  if (!TCHAR.test(scheme)) return { kind: "malformed" };
  if (scheme.toLowerCase() !== "bearer") return { kind: "none" };
  const token = space === -1 ? "" : value.slice(space).replace(/^ +/, "");
  return token !== "" && IS_B64TOKEN.test(token) ? { kind: "key", key: token } : { kind: "malformed" };
}

function referenceHeader(values: readonly string[]): Part {
  if (values.length === 0) return { kind: "none" };
  if (values.length > 1 || !IS_B64TOKEN.test(values[0]!)) return { kind: "malformed" };
  return { kind: "key", key: values[0]! };
}

function reference(auth: readonly string[], header: readonly string[]): Extraction["kind"] | { key: string } {
  const a = referenceBearer(auth);
  const h = referenceHeader(header);
  if (a.kind === "malformed" || h.kind === "malformed") return "malformed";
  if (a.kind === "key" && h.kind === "key" && a.key !== h.key) return "malformed";
  const key = a.kind === "key" ? a.key : h.kind === "key" ? h.key : undefined;
  if (key === undefined) return "none";
  return key.length > MAX_KEY_LENGTH ? "oversize" : { key };
}

/** Headers shaped the way Node builds them: first Authorization kept, X-API-Key values joined, all in rawHeaders. */
function nodeShaped(auth: readonly string[], header: readonly string[]) {
  const headers: Record<string, string> = {};
  if (auth.length > 0) headers.authorization = auth[0]!;
  if (header.length > 0) headers["x-api-key"] = header.join(", ");
  const rawHeaders = [...auth.flatMap((v) => ["Authorization", v]), ...header.flatMap((v) => ["X-API-Key", v])];
  return { headers, rawHeaders };
}

const summary = (e: Extraction) => (e.kind === "key" ? { key: e.key } : e.kind);

// Header values: any code point, the token alphabet, and hand-picked troublemakers.
const interesting = fc.constantFrom(
  " ",
  "  ",
  "\t",
  ",",
  ";",
  "=",
  "==",
  '"',
  "Bearer",
  "bearer ",
  "Basic ",
  "é",
  "\u00a0",
  "\u2028",
  "\u{1F511}",
  "\0",
  "\r\n",
);
const tokenChar = fc.constantFrom(...B64TOKEN_CHARS.split(""));
const anyText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: fc.oneof(tokenChar, interesting), maxLength: 40 }),
);
const token = fc
  .tuple(fc.string({ unit: tokenChar, minLength: 1, maxLength: 40 }), fc.constantFrom("", "=", "=="))
  .map(([t, pad]) => t + pad);
const bearerScheme = fc.mixedCase(fc.constant("bearer"));
const spaces = fc.integer({ min: 1, max: 3 }).map((n) => " ".repeat(n));
const bearerValue = fc.oneof(
  fc.tuple(bearerScheme, spaces, fc.oneof(token, anyText)).map(([s, sp, t]) => s + sp + t),
  fc.tuple(fc.oneof(bearerScheme, anyText), fc.oneof(spaces, anyText), anyText).map(([a, b, c]) => a + b + c),
  anyText,
);
const headerValue = fc.oneof(token, anyText);
const values = (value: fc.Arbitrary<string>) => fc.array(value, { maxLength: 2 });
/** Mostly zero or one value, sometimes a repeated header. */
const wireValues = (value: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant<string[]>([]) },
    { weight: 5, arbitrary: value.map((v) => [v]) },
    { weight: 1, arbitrary: fc.array(value, { minLength: 2, maxLength: 2 }) },
  );

describe("extractKey properties", () => {
  it("never throws, even on headers no HTTP parser would build", () => {
    const headerMap = fc.dictionary(
      fc.oneof(fc.constantFrom("authorization", "x-api-key", "__proto__", "constructor"), fc.string()),
      fc.oneof(fc.string({ unit: "binary" }), fc.array(fc.string({ unit: "binary" })), fc.constant(undefined)),
    );
    const raw = fc.option(fc.array(fc.oneof(fc.string({ unit: "binary" }), fc.constantFrom("Authorization", "X-API-KEY"))), {
      nil: undefined,
    });
    fc.assert(
      fc.property(
        headerMap,
        raw,
        fc.boolean(),
        fc.constantFrom<string | undefined>("x-api-key", undefined),
        (headers, rawHeaders, bearer, header) => {
          const result = extractKey(rawHeaders === undefined ? { headers } : { headers, rawHeaders }, {
            bearer,
            header,
            headerLabel: header ?? "",
          });
          expect(["none", "key", "malformed", "oversize"]).toContain(result.kind);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("agrees with the reference model of the documented rules", () => {
    fc.assert(
      fc.property(values(bearerValue), values(headerValue), (auth, header) => {
        expect(summary(extractKey(nodeShaped(auth, header), OPTIONS))).toEqual(reference(auth, header));
      }),
      { numRuns: 1000 },
    );
  });

  it("a key is always the exact token sent, in token syntax, and a malformed reason never contains it", () => {
    fc.assert(
      fc.property(values(bearerValue), values(headerValue), (auth, header) => {
        const result = extractKey(nodeShaped(auth, header), OPTIONS);
        if (result.kind === "key") {
          expect(result.key).toMatch(IS_B64TOKEN);
          expect(result.key.length).toBeLessThanOrEqual(MAX_KEY_LENGTH);
          const sent = [...auth.map((v) => v.slice(v.indexOf(" ")).trimStart()), ...header];
          expect(sent).toContain(result.key);
        }
        if (result.kind === "malformed") {
          // Candidate secrets: what follows the scheme, and key-header values (the reasons' fixed texts hold no digit).
          const candidates = [...auth.map((v) => (v.includes(" ") ? v.slice(v.indexOf(" ")).trim() : "")), ...header.map((v) => v.trim())];
          for (const t of candidates) if (t.length >= 4 && /\d/.test(t)) expect(result.reason).not.toContain(t);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("the Bearer scheme, in any case and with any run of spaces, never ends up in the key", () => {
    fc.assert(
      fc.property(bearerScheme, spaces, token, (scheme, sp, t) => {
        const result = extractKey(nodeShaped([`${scheme}${sp}${t}`], []), OPTIONS);
        expect(result).toEqual({ kind: "key", key: t, from: ["authorization"] });
      }),
      { numRuns: 300 },
    );
  });

  it("a key with any character outside the token syntax is never accepted", () => {
    const bad = fc.string({ unit: "binary", minLength: 1, maxLength: 1 }).filter((c) => !B64TOKEN_CHARS.includes(c) && c !== "=");
    const tainted = fc.tuple(token, bad, fc.string({ unit: tokenChar, maxLength: 10 })).map(([a, c, b]) => a + c + b);
    fc.assert(
      fc.property(tainted, bearerScheme, fc.boolean(), (key, scheme, viaHeader) => {
        const req = viaHeader ? nodeShaped([], [key]) : nodeShaped([`${scheme} ${key}`], []);
        expect(extractKey(req, OPTIONS).kind).toBe("malformed");
      }),
      { numRuns: 500 },
    );
  });
});

describe("key extraction end to end (Express + local service)", () => {
  let local: LocalFixture;
  let server: Server;
  let valid: { key: string; keyId: string };
  const seen: { headers: Record<string, unknown>; rawHeaders: string[] }[] = [];
  let handled = 0;

  beforeAll(async () => {
    local = await startLocal();
    valid = await local.createKey();
    const app = express();
    app.use((req, _res, next) => {
      seen.push({ headers: { ...req.headers }, rawHeaders: [...req.rawHeaders] });
      next();
    });
    app.get("/", apiKeyAuth({ rootKey: local.svc.rootKey, baseUrl: local.svc.baseUrl, logger: silentLogger, ...GENEROUS }), (req, res) => {
      handled++;
      res.json({ keyId: getApiKey(req)?.keyId ?? null });
    });
    server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await local.close();
  });

  // What an HTTP client can send: tab, printable ASCII and Latin-1; sometimes around the real key.
  const wireChar = fc.oneof(
    tokenChar,
    fc.constantFrom(" ", "\t", ",", "=", '"', "é", "\u00ff", "\u00a0"),
    fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  );
  const wireText = fc.string({ unit: wireChar, maxLength: 30 });
  const noise = fc.oneof(
    wireText,
    token,
    fc.tuple(bearerScheme, spaces, fc.oneof(token, wireText)).map(([s, sp, t]) => s + sp + t),
  );
  const scheme = (k: string) => fc.tuple(bearerScheme, spaces).map(([s, sp]) => s + sp + k);
  // Header pairs: the real key in well-formed places (some passes), unknown tokens, and noise.
  const headerPairs = (k: string) =>
    fc.oneof(
      fc.tuple(
        scheme(k).map((v) => [v]),
        fc.constantFrom<string[]>([], [k]),
      ),
      fc.tuple(fc.constant<string[]>([]), fc.constant([k])),
      fc.tuple(wireValues(fc.oneof(noise, scheme(k))), wireValues(fc.oneof(noise, fc.constant(k)))),
      fc.tuple(wireValues(fc.tuple(wireText, wireText).map(([a, b]) => a + k + b)), wireValues(noise)),
    );

  it("arbitrary header values never give a 500 and never reach the handler without the valid key", async () => {
    await fc.assert(
      fc.asyncProperty(headerPairs(valid.key), async ([auth, header]) => {
        const before = handled;
        // An array value sends the header once per element (a repeated header).
        const headers: Record<string, string | string[]> = {};
        if (auth.length > 0) headers.Authorization = auth.length === 1 ? auth[0]! : [...auth];
        if (header.length > 0) headers["X-API-Key"] = header.length === 1 ? header[0]! : [...header];
        const res = await request(server).get("/").set(headers);
        const got = seen.at(-1)!;
        // The reference sees what the server received (Node trims surrounding whitespace).
        const rawOf = (name: string) => got.rawHeaders.filter((_, i) => i % 2 === 1 && got.rawHeaders[i - 1]!.toLowerCase() === name);
        const expected = reference(rawOf("authorization"), rawOf("x-api-key"));
        const status = typeof expected === "object" ? (expected.key === valid.key ? 200 : 401) : expected === "malformed" ? 400 : 401;
        expect(res.status).toBe(status);
        expect(handled - before).toBe(status === 200 ? 1 : 0);
        if (status === 200) expect(res.body).toEqual({ keyId: valid.keyId });
        else expect(res.headers["www-authenticate"]).toMatch(/^Bearer realm="api"/);
      }),
      { numRuns: 50 },
    );
  });
});
