// The answers of production's operations against production's response schemas: for each operation
// of production's OpenAPI document keyguard implements, real calls to the key service, each answer's
// `data` validated (TypeBox's JSON Schema validator) against the schema rebuilt from the distilled
// facts (test/protocol/fixtures/production-contract.json). A client that validates answers against
// production's document must take every one: keyguard's own settings are answered by its own
// operations (apis.getApiSettings, keys.getKeySettings), never as extra fields where production
// closes an object.
import { readFileSync } from "node:fs";
import { Errors } from "typebox/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FACTS_FILE, OPERATIONS } from "../../scripts/distill-openapi.mjs";
import { start, type Started } from "../server/helpers";
import { CASES, makeFixture, type Fixture } from "../server/operations/operation-cases";
import type { ProductionFacts } from "./contract-differences";

const facts = JSON.parse(readFileSync(FACTS_FILE, "utf8")) as ProductionFacts;

type Fact = Record<string, unknown>;
interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: boolean;
  [keyword: string]: unknown;
}

const KEPT = ["minLength", "maxLength", "minimum", "maximum", "pattern", "enum", "minItems", "maxItems", "maxProperties"];

/** One node of the schema from its facts (children are added by `schemaOf`). */
function nodeOf(fact: Fact): JsonSchema {
  const node: JsonSchema = {};
  if (typeof fact.type === "string") {
    const types = fact.type.split("|");
    node.type = fact.nullable ? [...types, "null"] : types.length === 1 ? types[0] : types;
  }
  for (const k of KEPT) if (fact[k] !== undefined) node[k] = fact[k];
  if (fact.enum !== undefined && fact.nullable) node.enum = [...(fact.enum as unknown[]), null];
  // "unset" and "schema" leave the object open; only `false` closes it.
  if (fact.additionalProperties === false) node.additionalProperties = false;
  return node;
}

/** The JSON Schema of an answer's `data`, rebuilt from its flattened facts (`""`, `"a"`, `"a[]"`, `"a[].b"`). */
export function schemaOf(flat: Record<string, Fact>): JsonSchema {
  const nodes = new Map<string, JsonSchema>();
  for (const [path, fact] of Object.entries(flat)) nodes.set(path, nodeOf(fact));
  for (const [path, fact] of Object.entries(flat)) {
    if (path === "") continue;
    const node = nodes.get(path)!;
    if (path.endsWith("[]")) {
      nodes.get(path.slice(0, -2))!.items = node;
      continue;
    }
    const dot = path.lastIndexOf(".");
    const parent = nodes.get(dot === -1 ? "" : path.slice(0, dot))!;
    const name = dot === -1 ? path : path.slice(dot + 1);
    (parent.properties ??= {})[name] = node;
    if (fact.required) (parent.required ??= []).push(name);
  }
  return nodes.get("")!;
}

/**
 * Where production's document contradicts production's own answers, the fact is left out, with
 * the reason. Nothing else is.
 */
const CONTRADICTED: ReadonlyArray<{ operation: string; path: string; keyword: string; why: string }> = [
  {
    operation: "keys.verifyKey",
    path: "ratelimits[].reset",
    keyword: "maximum",
    why:
      "The document bounds `reset` at 2,592,000,000 (30 days, a duration) and describes it as the Unix time in ms the window " +
      "resets, which production answers (PROTOCOL.md): every real answer is above the bound.",
  },
];

function responseFacts(op: string): Record<string, Fact> {
  const flat = structuredClone(facts.operations[op]!.response) as Record<string, Fact>;
  for (const c of CONTRADICTED) if (c.operation === op) delete flat[c.path]![c.keyword];
  return flat;
}

/** Production's problems with `data` as the answer of `op`: `/path: message`. */
function problems(op: string, data: unknown): string[] {
  const [, errors] = Errors(schemaOf(responseFacts(op)), data);
  return errors.map(
    (e) => `${e.instancePath || "/"}: ${e.message}${e.keyword === "additionalProperties" ? ` ${JSON.stringify(e.params)}` : ""}`,
  );
}

describe("production's response schemas, rebuilt from the facts", () => {
  it("refuse what production refuses (the check can fail)", () => {
    expect(problems("apis.getApi", { id: "api_1234567890", name: "orders" })).toEqual([]);
    expect(problems("apis.getApi", { id: "api_1234567890", name: "orders", storeKeys: false }).join()).toMatch(/additional/);
    expect(problems("keys.getKey", { keyId: "key_1234567890", start: "k", enabled: true, createdAt: 1, leakReports: [] }).join()).toMatch(
      /additional/,
    );
    expect(problems("keys.getKey", { keyId: "key_1234567890", start: "k", createdAt: 1 }).join()).toMatch(/enabled/);
    expect(
      problems("apis.listKeys", [{ keyId: "key_1234567890", start: "k", enabled: true, createdAt: 1, credits: { x: 1 } }]).join(),
    ).toMatch(/additional/);
  });
});

describe("every answer of production's operations matches production's schema", () => {
  let s: Started;
  let f: Fixture;
  /** Keys with every setting production has, and keyguard's own settings set too. */
  let rich: { keyId: string; key: string };

  beforeAll(async () => {
    s = await start({ webhooksAllowPrivate: true });
    f = await makeFixture(s);
    const ok = async (op: string, body: unknown) => {
      const res = await s.call(op, body);
      if (res.status !== 200) throw new Error(`${op}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.data;
    };
    await ok("identities.updateIdentity", {
      identity: "ext-1",
      ratelimits: [{ name: "per-id", limit: 5, duration: 60_000, autoApply: true }],
    });
    rich = await ok("keys.createKey", {
      apiId: f.apiId,
      name: "rich",
      prefix: "rich",
      externalId: "ext-1",
      meta: { plan: "pro", nested: { a: [1, 2] } },
      permissions: ["perm.one"],
      roles: ["role.one"],
      expires: Date.now() + 86_400_000,
      credits: { remaining: 100, refill: { interval: "monthly", amount: 100, refillDay: 3 } },
      ratelimits: [{ name: "requests", limit: 10, duration: 60_000, autoApply: true }],
      // keyguard's own settings: answered by keys.getKeySettings, not by production's operations.
      ipWhitelist: ["127.0.0.1", "::1"],
      creditsLowThreshold: 10,
    });
    await ok("apis.updateApi", {
      apiId: f.apiId,
      keyFormat: "plain",
      leakResponse: "flag",
      creditsLowThreshold: 5,
      ipWhitelist: ["127.0.0.0/8", "::1"],
    });
    await ok("keys.verifyKey", { key: rich.key });
    // A key imported by hash: the service never saw its first characters.
    await ok("keys.migrateKeys", {
      migrationId: f.migrationId,
      apiId: f.apiId,
      keys: [{ hash: "a-hash-imported-first", name: "imported" }],
    });
  });
  afterAll(() => s?.close());

  it("covers every operation of production's document keyguard implements", () => {
    expect(Object.keys(facts.operations).sort()).toEqual([...OPERATIONS].sort());
    for (const op of OPERATIONS) expect(CASES[op], op).toBeDefined();
  });

  /** Calls beyond each operation's case: the answers with the most fields. */
  const extra = (op: string): unknown[] => {
    switch (op) {
      case "keys.getKey":
        return [{ keyId: rich.keyId }];
      case "keys.whoami":
        return [{ key: rich.key }];
      case "apis.listKeys":
        return [{ apiId: f.apiId }, { apiId: f.apiId, externalId: "ext-1" }];
      case "keys.verifyKey":
        return [
          { key: rich.key, permissions: "perm.one", ratelimits: [{ name: "requests" }], credits: { cost: 1 }, tags: ["a"] },
          { key: rich.key, permissions: "perm.missing" },
          { key: "missing_key_000000000000" },
        ];
      case "keys.updateCredits":
        return [{ keyId: rich.keyId, operation: "decrement", value: 1 }];
      case "identities.getIdentity":
      case "identities.updateIdentity":
        return [{ identity: "ext-1" }];
      case "permissions.getRole":
        return [{ role: "role.one" }];
      case "ratelimit.multiLimit":
        return [[{ namespace: "ns.one", identifier: "a", limit: 1, duration: 60_000, cost: 2 }]];
      default:
        return [];
    }
  };

  for (const op of OPERATIONS) {
    it(op, async () => {
      const found: string[] = [];
      for (const body of [CASES[op]!.body(f), ...extra(op)]) {
        const res = await s.call(op, body, CASES[op]!.session?.(f));
        expect(res.status, `${op} ${JSON.stringify(res.body).slice(0, 300)}`).toBe(200);
        for (const p of problems(op, res.body.data)) found.push(`${JSON.stringify(body).slice(0, 80)} → ${p}`);
      }
      expect(found).toEqual([]);
    });
  }
});
