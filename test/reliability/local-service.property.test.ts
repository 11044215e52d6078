// Property tests of the local key service: arbitrary JSON bodies (known and unknown fields, hostile
// keys, huge numbers, deep nesting, broken JSON) to every operation never give a 500, always an envelope.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OperationName } from "keyguard/client";
import { startLocal, type LocalFixture } from "./support";

const RUNS_PER_OPERATION = 40;

let local: LocalFixture;
/** Real ids, made afresh for each operation, so that bodies get past validation into the handlers. */
const real = { apiId: "", keyId: "", key: "", externalId: "", permission: "", role: "", roleId: "", migrationId: "" };
const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).sort();
let round = 0;

async function freshFixtures(): Promise<void> {
  round++;
  const { client } = local;
  real.apiId = (await client.apis.createApi({ name: `fuzz ${round}` })).apiId;
  real.permission = `fuzz.read.${round}`;
  real.role = `fuzz-role-${round}`;
  real.externalId = `fuzz-identity-${round}`;
  await client.permissions.createPermission({ name: real.permission, slug: real.permission });
  real.roleId = (await client.permissions.createRole({ name: real.role, permissions: [real.permission] })).roleId;
  real.migrationId = (await local.svc.service.createKeyMigration()).migrationId;
  await client.identities.createIdentity({ externalId: real.externalId });
  const created = await client.keys.createKey({
    apiId: real.apiId,
    permissions: [real.permission],
    roles: [real.role],
    externalId: real.externalId,
  });
  real.keyId = created.keyId;
  real.key = created.key;
  // The override the override operations' seeds name, in a namespace that `limit` creates.
  await client.ratelimit.limit({ namespace: "ns", identifier: "seed", limit: 1000, duration: 60_000 });
  await client.ratelimit.setOverride({ namespace: "ns", identifier: "user_*", limit: 10, duration: 60_000 });
}

let created = 0;
/** A valid body per operation (unique names where the service wants them), which the generator then mutates. */
const SEEDS: Record<OperationName, () => Record<string, unknown> | unknown[]> = {
  "keys.verifyKey": () => ({ key: real.key, permissions: real.permission }),
  "keys.createKey": () => ({ apiId: real.apiId }),
  "keys.getKey": () => ({ keyId: real.keyId }),
  "keys.whoami": () => ({ key: real.key }),
  "keys.updateKey": () => ({ keyId: real.keyId, name: "renamed" }),
  "keys.deleteKey": () => ({ keyId: real.keyId }),
  "keys.updateCredits": () => ({ keyId: real.keyId, operation: "set", value: 10 }),
  "keys.addPermissions": () => ({ keyId: real.keyId, permissions: [real.permission] }),
  "keys.removePermissions": () => ({ keyId: real.keyId, permissions: [real.permission] }),
  "keys.setPermissions": () => ({ keyId: real.keyId, permissions: [real.permission] }),
  "keys.addRoles": () => ({ keyId: real.keyId, roles: [real.role] }),
  "keys.removeRoles": () => ({ keyId: real.keyId, roles: [real.role] }),
  "keys.setRoles": () => ({ keyId: real.keyId, roles: [real.role] }),
  "keys.rerollKey": () => ({ keyId: real.keyId, expiration: 0 }),
  "apis.createApi": () => ({ name: "fuzz api" }),
  "apis.getApi": () => ({ apiId: real.apiId }),
  "apis.listKeys": () => ({ apiId: real.apiId }),
  "apis.deleteApi": () => ({ apiId: real.apiId }),
  "permissions.createPermission": () => {
    const slug = `fuzz.new.${++created}`;
    return { name: slug, slug };
  },
  "permissions.getPermission": () => ({ permission: real.permission }),
  "permissions.listPermissions": () => ({}),
  "permissions.deletePermission": () => ({ permission: real.permission }),
  "permissions.createRole": () => ({ name: `fuzz-new-role-${++created}` }),
  "permissions.getRole": () => ({ role: real.role }),
  "permissions.listRoles": () => ({}),
  "permissions.deleteRole": () => ({ role: real.role }),
  "identities.createIdentity": () => ({ externalId: `fuzz-new-identity-${++created}` }),
  "identities.getIdentity": () => ({ identity: real.externalId }),
  "identities.listIdentities": () => ({}),
  "identities.updateIdentity": () => ({ identity: real.externalId, meta: { a: 1 } }),
  "identities.deleteIdentity": () => ({ identity: real.externalId }),
  "ratelimit.limit": () => ({ namespace: "ns", identifier: "user", limit: 10, duration: 60_000 }),
  // An array body: the edits below turn it into an object with index keys (a 400), the other bodies are any JSON.
  "ratelimit.multiLimit": () => [{ namespace: "ns", identifier: "user", limit: 10, duration: 60_000 }],
  "ratelimit.setOverride": () => ({ namespace: "ns", identifier: "user_*", limit: 10, duration: 60_000 }),
  "ratelimit.getOverride": () => ({ namespace: "ns", identifier: "user_1" }),
  "ratelimit.listOverrides": () => ({ namespace: "ns" }),
  "ratelimit.deleteOverride": () => ({ namespace: "ns", identifier: "user_*" }),
  "permissions.setRolePermissions": () => ({ roleId: real.roleId, permissions: [real.permission] }),
  "keys.migrateKeys": () => ({ migrationId: real.migrationId, apiId: real.apiId, keys: [{ hash: `aGFzaA${++created}` }] }),
  "analytics.getVerifications": () => ({ query: "SELECT outcome, count(*) AS total FROM key_verifications_v1 GROUP BY outcome" }),
  // With the root key: a portal it cannot see (404), a code that is none (401), session operations refused (403).
  "portal.createSession": () => ({ portal: "portal_missing", externalId: "user_1", scopes: ["keys:read"] }),
  "portal.exchangeCode": () => ({ code: "pst_missing_secret" }),
  "portal.listKeys": () => ({}),
  "portal.rerollKey": () => ({ keyId: real.keyId, expiration: 0 }),
  "portal.getVerifications": () => ({ startTime: 0, endTime: 60_000 }),
};
const OPERATIONS = Object.keys(SEEDS) as OperationName[];
/** The portal's operations, called here with the root key: refused (404, 401, 403) as the seeds' comment says. */
const REFUSED_TO_ROOT_KEY = new Set<string>(OPERATIONS.filter((op) => op.startsWith("portal.")));

beforeAll(async () => {
  local = await startLocal();
});
afterAll(() => local.close());

// Values, as JSON text.
const text = (arb: fc.Arbitrary<unknown>) => arb.map((v) => JSON.stringify(v) ?? "null");
const hugeNumber = fc.constantFrom(
  "1e400",
  "-1e400",
  "1e308",
  "-0",
  "123456789012345678901234567890",
  "9007199254740993",
  "0.0000000000000000000001",
  "1E+2",
);
const deepNesting = fc
  .tuple(fc.constantFrom(50, 1_000, 5_000), fc.constantFrom("array", "object"))
  .map(([n, kind]) => (kind === "array" ? "[".repeat(n) + "]".repeat(n) : '{"a":'.repeat(n) + "1" + "}".repeat(n)));
const hostileObject = fc.constantFrom(
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"__proto__":null,"toString":1,"hasOwnProperty":"x","valueOf":[]}',
  '{"prototype":{"polluted":true},"__defineGetter__":1}',
);
const lazy = <T>(f: () => T) => fc.constant(null).map(f);
const slug = fc.oneof(
  lazy(() => real.permission),
  fc.stringMatching(/^[a-z.*_:-]{1,20}$/),
  fc.string({ maxLength: 20 }),
);
const int = fc.oneof(fc.integer({ min: -5, max: 200 }), fc.integer(), fc.constantFrom(0, 1000, 60_000, 1e12, 2 ** 53, -1));

/** Plausible values per known field name (and any JSON for any of them). */
function knownFields(): Record<string, fc.Arbitrary<unknown>> {
  const ratelimit = fc.record(
    { name: fc.constantFrom("requests", "burst", ""), limit: int, duration: int, cost: int, autoApply: fc.boolean() },
    { requiredKeys: [] },
  );
  const refill = fc.record({ interval: fc.constantFrom("daily", "monthly", "weekly"), amount: int, refillDay: int }, { requiredKeys: [] });
  return {
    key: fc.oneof(
      lazy(() => real.key),
      fc.constantFrom("sk_unknown", "", "x".repeat(600)),
    ),
    apiId: fc.oneof(
      lazy(() => real.apiId),
      fc.constantFrom("api_missing", ""),
    ),
    keyId: fc.oneof(
      lazy(() => real.keyId),
      fc.constantFrom("key_missing", ""),
    ),
    identity: fc.oneof(
      lazy(() => real.externalId),
      fc.constant("id_missing"),
    ),
    externalId: fc.oneof(
      lazy(() => real.externalId),
      fc.string({ maxLength: 12 }),
    ),
    permission: fc.oneof(
      lazy(() => real.permission),
      slug,
    ),
    role: fc.oneof(
      lazy(() => real.role),
      fc.constant("role_missing"),
    ),
    permissions: fc.oneof(fc.array(slug, { maxLength: 4 }), fc.constantFrom("fuzz.read AND (a OR b)", "a AND (", "OR", "")),
    roles: fc.array(
      fc.oneof(
        lazy(() => real.role),
        fc.constant("nope"),
      ),
      { maxLength: 3 },
    ),
    name: fc.string({ maxLength: 20 }),
    description: fc.string({ maxLength: 20 }),
    slug,
    prefix: fc.stringMatching(/^[A-Za-z0-9_]{0,20}$/),
    namespace: fc.constantFrom("ns", ""),
    identifier: fc.string({ maxLength: 10 }),
    search: fc.string({ maxLength: 10 }),
    cursor: fc.string({ maxLength: 10 }),
    operation: fc.constantFrom("set", "increment", "decrement", "multiply"),
    byteLength: int,
    limit: int,
    duration: int,
    cost: int,
    expires: int,
    expiration: int,
    remaining: int,
    value: fc.oneof(int, fc.constant(null)),
    credits: fc.oneof(fc.record({ remaining: fc.oneof(int, fc.constant(null)), refill }, { requiredKeys: [] }), fc.record({ cost: int })),
    refill,
    ratelimits: fc.array(ratelimit, { maxLength: 3 }),
    meta: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
    tags: fc.array(fc.string({ maxLength: 10 }), { maxLength: 25 }),
    enabled: fc.boolean(),
    recoverable: fc.boolean(),
    decrypt: fc.boolean(),
    permanent: fc.boolean(),
    revalidateKeysCache: fc.boolean(),
  };
}

/** A request body as raw text: a mutated valid body, any JSON, an object of known/unknown/hostile fields, or broken JSON. */
function bodies(operation: OperationName): fc.Arbitrary<string> {
  const known = knownFields();
  const names = Object.keys(known);
  const anyValue = fc.oneof(text(fc.jsonValue({ maxDepth: 3 })), hugeNumber, deepNesting, hostileObject);
  const field = fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .constantFrom(...names)
        .chain((n) => fc.tuple(fc.constant(n), fc.oneof({ weight: 4, arbitrary: text(known[n]!) }, anyValue))),
    },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom("__proto__", "constructor", "prototype", "toString", "hasOwnProperty"), anyValue) },
    { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 12 }), anyValue) },
  );
  const render = (pairs: readonly (readonly [string, string])[]) => `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`;
  const object = fc.array(field, { maxLength: 7 }).map(render);
  // The seed with up to 3 edits: a field set (replacing one of that name) or a field dropped.
  const edit = fc.oneof(
    field.map((f) => ({ set: f })),
    fc.nat().map((n) => ({ drop: n })),
  );
  const mutated = fc.array(edit, { maxLength: 3 }).map((edits) => {
    let pairs = Object.entries(SEEDS[operation]()).map(([k, v]) => [k, JSON.stringify(v)] as const);
    for (const e of edits) {
      if ("set" in e) pairs = [...pairs.filter(([k]) => k !== e.set[0]), e.set];
      else if (pairs.length > 0) pairs = pairs.filter((_, i) => i !== e.drop % pairs.length);
    }
    return render(pairs);
  });
  return fc.oneof(
    { weight: 6, arbitrary: mutated },
    { weight: 3, arbitrary: object },
    { weight: 1, arbitrary: text(fc.jsonValue()) },
    { weight: 1, arbitrary: fc.oneof(hugeNumber, deepNesting, hostileObject) },
    { weight: 1, arbitrary: fc.tuple(object, fc.nat()).map(([t, n]) => t.slice(0, n % Math.max(1, t.length))) },
  );
}

/** Checks the envelope of one answer; returns a description of what is wrong, or undefined. */
function envelopeProblem(status: number, body: unknown): string | undefined {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "body is not a JSON object";
  const b = body as Record<string, unknown>;
  const meta = b.meta as { requestId?: unknown } | undefined;
  if (typeof meta?.requestId !== "string" || !meta.requestId.startsWith("req_")) return "meta.requestId is not a req_ id";
  if ("data" in b === "error" in b) return "not exactly one of data and error";
  if ("data" in b) return status === 200 ? undefined : `data with status ${status}`;
  const e = b.error as Record<string, unknown> | null;
  if (typeof e !== "object" || e === null) return "error is not an object";
  for (const f of ["title", "detail", "type"]) if (typeof e[f] !== "string") return `error.${f} is not a string`;
  if (e.status !== status) return `error.status ${String(e.status)} differs from HTTP ${status}`;
  if (status === 400 && !Array.isArray(e.errors)) return "a 400 without an errors array";
  return undefined;
}

async function post(operation: string, body: string) {
  const res = await fetch(`${local.svc.baseUrl}/v2/${operation}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${local.svc.rootKey}`, "Content-Type": "application/json" },
    body,
  });
  const raw = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, contentType: res.headers.get("content-type") ?? "", raw, parsed };
}

describe("every operation, arbitrary bodies", () => {
  it("covers the whole operation table", () => {
    expect(OPERATIONS).toHaveLength(45);
  });

  it.each(OPERATIONS)("%s: never a 500, always a valid envelope", async (operation) => {
    await freshFixtures();
    // Anchors: the unmutated seed is valid (the generated bodies start from inside the handler)
    // and broken JSON is a 400 envelope.
    const seed = await post(operation, JSON.stringify(SEEDS[operation]()));
    if (REFUSED_TO_ROOT_KEY.has(operation)) {
      // Bodies reach these only as far as the refusal; still never a 500, always an envelope.
      expect(seed.status, seed.raw.slice(0, 300)).toBeGreaterThanOrEqual(400);
      expect(seed.status, seed.raw.slice(0, 300)).toBeLessThan(500);
      expect(envelopeProblem(seed.status, seed.parsed)).toBeUndefined();
    } else expect(seed.status, seed.raw.slice(0, 300)).toBe(200);
    const broken = await post(operation, '{"key": ');
    expect(broken.status).toBe(400);
    expect(envelopeProblem(broken.status, broken.parsed)).toBeUndefined();
    await freshFixtures();
    await fc.assert(
      fc.asyncProperty(bodies(operation), async (body) => {
        const res = await post(operation, body);
        expect(res.status, res.raw.slice(0, 300)).toBeLessThan(500);
        expect(res.contentType).toMatch(/^application\/(problem\+)?json/);
        expect(envelopeProblem(res.status, res.parsed), res.raw.slice(0, 300)).toBeUndefined();
      }),
      { numRuns: RUNS_PER_OPERATION },
    );
  });

  it("no unexpected error was logged by the service, and nothing reached Object.prototype", () => {
    expect(local.logger.entries.filter((e) => e.level === "error")).toEqual([]);
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeBefore);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
