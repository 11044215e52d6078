// An error message never repeats a string value the caller sent: for every operation of the
// service, each secret (a real key, the root key, root keys shaped as operators make them, random
// strings) goes into every position of the request body (string fields, wrong-type positions,
// array elements, nested objects), and no error answer, no header of any answer, and no line the
// service or apiKeyAuth() logs holds it.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyAuth, type Logger } from "keyguard";
import { CONTRACT, EXTENSION_CONTRACT, contractOf } from "../../../src/protocol/contract";
import { BASE58_ALPHABET } from "../../../src/protocol/base58";
import { ALL_OPERATIONS } from "../../../src/server/operations/table";
import { GENEROUS } from "../../support/time-limits";
import { start, type Started } from "../helpers";
import { CASES, makeFixture, type Fixture } from "./operation-cases";

interface Line {
  level: string;
  fields: unknown;
  message: string;
}

function capturingLogger(lines: Line[]): Logger {
  const keep = (level: string) => (fields: unknown, message: string) => lines.push({ level, fields, message });
  return { debug: keep("debug"), warn: keep("warn"), error: keep("error") };
}

const random = (alphabet: string, n: number) => Array.from(randomBytes(n), (b) => alphabet[b % alphabet.length]).join("");

/** Values no answer or log may repeat; the real key and root keys are added once the service runs. */
function madeUpSecrets(): Record<string, string> {
  return {
    "root_ + 48 hex digits": `root_${randomBytes(24).toString("hex")}`,
    "root_ + base64": `root_${randomBytes(36).toString("base64")}`,
    "root_ + base64url": `root_${randomBytes(36).toString("base64url")}`,
    "a random base58 string": random(BASE58_ALPHABET, 24),
    "random lower-case letters": random("abcdefghijklmnopqrstuvwxyz", 28),
    "random digits": random("0123456789", 30),
    "a random name with dots": `${random("abcdefghijklmnopqrstuvwxyz", 10)}.${random("abcdefghijklmnopqrstuvwxyz", 10)}`,
  };
}

/** Where a secret may show: itself, its JSON form, and its middle (a value cut short is still repeated). */
function traces(secret: string): string[] {
  const middle = secret.slice(Math.floor(secret.length / 2) - 7, Math.floor(secret.length / 2) + 7);
  return [secret, JSON.stringify(secret).slice(1, -1), middle];
}

type Path = ReadonlyArray<string | number>;
interface Node {
  type?: string;
  properties?: Record<string, Node>;
  items?: Node;
  anyOf?: Node[];
}

/** Every position of a request schema: each field, each array's first element, nested objects' fields. */
function positions(schema: Node, at: Path = []): Path[] {
  const out: Path[] = at.length === 0 ? [] : [at];
  for (const member of schema.anyOf ?? []) if (member.type !== "null") out.push(...positions(member, at).filter((p) => p !== at));
  if (schema.properties) for (const [name, field] of Object.entries(schema.properties)) out.push(...positions(field, [...at, name]));
  if (schema.items) out.push(...positions(schema.items, [...at, 0]));
  // A field the schema does not know, and free-form metadata, hold a secret too.
  if (schema.type === "object") out.push([...at, "unknownField"], [...at, "nested", "deeper"]);
  return out;
}

/** `base` with `value` at `path` (containers made on the way, an array's first element kept). */
function placed(base: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  if (typeof head === "number") {
    const list = Array.isArray(base) ? [...(base as unknown[])] : [];
    list[0] = placed(list[0] ?? (typeof rest[0] === "number" ? [] : rest.length > 0 ? {} : undefined), rest, value);
    return list;
  }
  const obj = base !== null && typeof base === "object" && !Array.isArray(base) ? { ...(base as Record<string, unknown>) } : {};
  obj[head!] = placed(obj[head!], rest, value);
  return obj;
}

/** Bodies that reach further than the cases' (names looked up, rate limits resolved, lists filled). */
function richer(op: string, f: Fixture): unknown[] {
  const limit = { name: "requests", limit: 10, duration: 60_000 };
  switch (op) {
    case "keys.verifyKey":
      return [{ key: f.key, permissions: "perm.one", ratelimits: [limit], tags: ["t"], credits: { cost: 0 }, migrationId: f.migrationId }];
    case "keys.createKey":
      return [
        {
          apiId: f.apiId,
          name: "n",
          prefix: "p",
          externalId: "ext-1",
          meta: { a: "b" },
          permissions: ["perm.one"],
          roles: ["role.one"],
          ratelimits: [{ ...limit, autoApply: true }],
          ipWhitelist: ["127.0.0.1"],
        },
      ];
    case "keys.updateKey":
      return [
        {
          keyId: f.keyId,
          externalId: "ext-1",
          permissions: ["perm.one"],
          roles: ["role.one"],
          ratelimits: [{ ...limit, autoApply: true }],
        },
      ];
    case "identities.createIdentity":
    case "identities.updateIdentity":
      return [{ ...(CASES[op]!.body(f) as object), ratelimits: [{ ...limit, autoApply: true }] }];
    case "ratelimit.limit":
      return [{ namespace: "ns.one", identifier: "x", limit: 5, duration: 60_000 }];
    default:
      return [];
  }
}

describe("no answer, header or log line repeats a secret sent in any field", () => {
  let s: Started;
  let f: Fixture;
  const lines: Line[] = [];
  let secrets: Record<string, string>;
  /** A root key without any permission: the refusals (403 and the 404s that mask them) are scanned too. */
  let bare: string;

  beforeAll(async () => {
    s = await start({ webhooksAllowPrivate: true, logger: capturingLogger(lines) });
    f = await makeFixture(s);
    bare = (await s.service.createRootKey({ permissions: [] })).rootKey;
    const other = await s.createKey();
    secrets = { "a real key": other.key, "the root key": s.rootKey, ...madeUpSecrets() };
  });
  afterAll(() => s?.close());

  it("goes through every operation of the contract", () => {
    const served = ALL_OPERATIONS.map((op) => op.name).sort();
    expect(Object.keys({ ...CONTRACT, ...EXTENSION_CONTRACT }).sort()).toEqual(served);
    expect(Object.keys(CASES).sort()).toEqual(served);
  });

  for (const op of Object.keys(CASES)) {
    it(op, async () => {
      const schema = contractOf(op)!.request as Node;
      const bases = [CASES[op]!.body(f), ...richer(op, f)];
      const found: string[] = [];
      let calls = 0;
      for (const base of bases) {
        const places: Path[] = [[], ...positions(schema)];
        if (Array.isArray(base)) places.push(...positions(schema.items ?? {}, [0]));
        for (const path of places) {
          for (const [kind, secret] of Object.entries(secrets)) {
            lines.length = 0;
            const body = placed(base, path, secret);
            // Twice: a name taken by the first call is refused by the second ("already exists");
            // then with a root key that may do nothing.
            for (const round of [1, 2, 3]) {
              const res = await s.call(op, body, round === 3 ? bare : undefined);
              calls++;
              const where = `${op} ${kind} at body${path.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("")} (call ${round}, ${res.status})`;
              const answer = res.status >= 300 ? JSON.stringify(res.body) : "";
              const headers = JSON.stringify([...res.headers.entries()]);
              for (const t of traces(secret)) {
                if (answer.includes(t)) found.push(`${where}: the answer ${answer.slice(0, 300)}`);
                if (headers.includes(t)) found.push(`${where}: a header`);
              }
            }
            const logged = JSON.stringify(lines);
            for (const t of traces(secret))
              if (logged.includes(t)) found.push(`${op} ${kind} at ${path.join(".")}: a log line ${logged.slice(0, 300)}`);
          }
        }
      }
      expect(calls).toBeGreaterThan(0);
      expect([...new Set(found)]).toEqual([]);
    });
  }

  it("analytics.getVerifications: a secret inside the query's SQL", async () => {
    // Each place of the SQL a caller's text may take; every one is refused (or answered) without it.
    const queries = (x: string): string[] => [
      `SELECT * FROM ${x}`,
      `SELECT * FROM "${x}"`,
      `SELECT * FROM ${x}.key_verifications_v1`,
      `SELECT ${x} FROM key_verifications_v1`,
      `SELECT "${x}" FROM key_verifications_v1`,
      `SELECT ${x}.key_id FROM key_verifications_v1`,
      `SELECT ${x}(time) FROM key_verifications_v1`,
      `SELECT count(*) FROM key_verifications_v1 WHERE ${x}(outcome) = 'VALID'`,
      `SELECT count(*) FROM key_verifications_v1 WHERE outcome = '${x}'`,
      `SELECT count(*) FROM key_verifications_v1 WHERE outcome = '${x}`,
      `SELECT count(*) FROM key_verifications_v1 WHERE outcome = ${x}`,
      `SELECT count(*) FROM key_verifications_v1 WHERE time > now() - INTERVAL 1 ${x}`,
      `SELECT key_id AS "${x}", outcome AS "${x}" FROM key_verifications_v1`,
      `SELECT outcome AS "${x}", count(*) FROM key_verifications_v1`,
      `${x} FROM key_verifications_v1`,
      `SELECT * FROM key_verifications_v1 WHERE ${x} ${x} ${x}`,
    ];
    const found: string[] = [];
    let refusals = 0;
    for (const [kind, secret] of Object.entries(secrets)) {
      for (const sql of queries(secret)) {
        lines.length = 0;
        const res = await s.call("analytics.getVerifications", { query: sql });
        if (res.status >= 400) refusals++;
        const answer = JSON.stringify(res.body);
        const logged = JSON.stringify(lines);
        for (const t of traces(secret)) {
          if (res.status >= 300 && answer.includes(t)) found.push(`${kind} in ${sql.replace(secret, "<secret>")}: ${answer.slice(0, 300)}`);
          if (logged.includes(t)) found.push(`${kind} in ${sql.replace(secret, "<secret>")}: a log line ${logged.slice(0, 300)}`);
        }
      }
    }
    // The queries were read (400s of the analytics kinds), not refused before the SQL was looked at.
    expect(refusals).toBeGreaterThan(Object.keys(secrets).length * 10);
    expect([...new Set(found)]).toEqual([]);
  });
});

describe("apiKeyAuth() logs and answers no secret of a request's shape", () => {
  let s: Started;
  const serviceLines: Line[] = [];
  beforeAll(async () => {
    s = await start({ logger: capturingLogger(serviceLines) });
  });
  afterAll(() => s?.close());

  type Handler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;
  const serve = (auth: Handler) =>
    createServer((req, res) =>
      auth(req, res, () => {
        res.end("ok");
      }),
    );

  it("a secret as a rate limit's name or in a computed permission query", async () => {
    const { key } = await s.createKey();
    const other = (await s.createKey()).key;
    const found: string[] = [];
    for (const [kind, secret] of Object.entries({ "a real key": other, "the root key": s.rootKey, ...madeUpSecrets() })) {
      const shapes: Array<Record<string, unknown>> = [
        { ratelimits: [{ name: secret }] },
        { ratelimits: () => [{ name: secret }] },
        { permissions: () => `${secret} AND (` },
        { ratelimits: () => [{ name: secret, cost: -1 }] },
        { tags: () => [secret, secret.repeat(30)] },
      ];
      for (const [i, shape] of shapes.entries()) {
        const lines: Line[] = [];
        serviceLines.length = 0;
        let app;
        try {
          app = serve(
            apiKeyAuth({ rootKey: s.rootKey, baseUrl: s.baseUrl, ...GENEROUS, logger: capturingLogger(lines), ...shape }) as Handler,
          );
        } catch (err) {
          // An option refused when apiKeyAuth() is made is the developer's own value, not a request's.
          found.push(`${kind}, shape ${i}: apiKeyAuth() refused it (${(err as Error).message.slice(0, 100)})`);
          continue;
        }
        const res = await request(app).get("/").set("Authorization", `Bearer ${key}`);
        const seen = JSON.stringify({ text: res.text, headers: res.headers, lines, serviceLines });
        for (const t of traces(secret)) if (seen.includes(t)) found.push(`${kind}, shape ${i} (${res.status}): ${seen.slice(0, 400)}`);
      }
    }
    expect([...new Set(found)]).toEqual([]);
  });
});
