// Distils production's OpenAPI document into the facts keyguard's contract is compared with:
// for each operation keyguard implements, the request body's and the answer `data`'s fields
// (type, required, lengths, bounds, pattern, enum, nullable, items, additionalProperties), $refs
// resolved, flattened by path. The document itself is never stored in this repository.
//   node scripts/distill-openapi.mjs <openapi.yaml> [out.json]   (default test/protocol/fixtures/production-contract.json)
/* global process, console */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const FACTS_FILE = join(ROOT, "test", "protocol", "fixtures", "production-contract.json");

/** Where the document comes from. */
export const SOURCE = Object.freeze({
  repository: "unkeyed/unkey",
  path: "svc/api/openapi/openapi-generated.yaml",
  commit: "fc99b6b925b9f455886832261883f4086eb64d3d",
});

/** The operations of production's v2 API keyguard implements (the test checks this against the contract). */
export const OPERATIONS = Object.freeze([
  "analytics.getVerifications",
  "apis.createApi",
  "apis.deleteApi",
  "apis.getApi",
  "apis.listKeys",
  "identities.createIdentity",
  "identities.deleteIdentity",
  "identities.getIdentity",
  "identities.listIdentities",
  "identities.updateIdentity",
  "keys.addPermissions",
  "keys.addRoles",
  "keys.createKey",
  "keys.deleteKey",
  "keys.getKey",
  "keys.migrateKeys",
  "keys.removePermissions",
  "keys.removeRoles",
  "keys.rerollKey",
  "keys.setPermissions",
  "keys.setRoles",
  "keys.updateCredits",
  "keys.updateKey",
  "keys.verifyKey",
  "keys.whoami",
  "permissions.createPermission",
  "permissions.createRole",
  "permissions.deletePermission",
  "permissions.deleteRole",
  "permissions.getPermission",
  "permissions.getRole",
  "permissions.listPermissions",
  "permissions.listRoles",
  "permissions.setRolePermissions",
  "portal.createSession",
  "portal.exchangeCode",
  "portal.getVerifications",
  "portal.listKeys",
  "portal.rerollKey",
  "ratelimit.deleteOverride",
  "ratelimit.getOverride",
  "ratelimit.limit",
  "ratelimit.listOverrides",
  "ratelimit.multiLimit",
  "ratelimit.setOverride",
]);

/** The JSON Schema keywords compared, as they are. */
const KEPT = ["minLength", "maxLength", "minimum", "maximum", "pattern", "enum", "minItems", "maxItems", "maxProperties"];

/**
 * The facts of a JSON Schema, flattened: `{ "": root, "name": …, "list[]": …, "list[].field": … }`.
 * `resolveRef` turns a `$ref` into its schema. Used for production's document and keyguard's
 * contract alike, so both sides are described the same way.
 */
export function factsOf(schema, resolveRef = () => undefined) {
  const out = {};
  const walk = (node, path, required, seen) => {
    const s = normalize(node, resolveRef, seen);
    const facts = {};
    if (s.type !== undefined) facts.type = s.type;
    if (required) facts.required = true;
    if (s.nullable) facts.nullable = true;
    for (const k of KEPT) if (s[k] !== undefined) facts[k] = s[k];
    if (s.type === "object" || s.properties !== undefined) {
      const ap = s.additionalProperties;
      facts.additionalProperties =
        ap === undefined ? (s.properties === undefined ? true : "unset") : typeof ap === "boolean" ? ap : "schema";
    }
    out[path] = facts;
    // `seen` holds the $refs on the way here (a schema met again below itself is not followed).
    for (const [name, child] of Object.entries(s.properties ?? {})) {
      walk(child, path === "" ? name : `${path}.${name}`, (s.required ?? []).includes(name), new Set(seen));
    }
    if (s.items !== undefined) walk(s.items, `${path}[]`, false, new Set(seen));
  };
  walk(schema, "", false, new Set());
  return out;
}

/** One schema without $ref, allOf, nullable unions or type arrays: what its facts are read from. */
function normalize(node, resolveRef, seen) {
  let s = node ?? {};
  while (s.$ref !== undefined) {
    if (seen.has(s.$ref)) return { type: "object", recursive: s.$ref };
    seen.add(s.$ref);
    const { $ref, ...rest } = s;
    s = { ...resolveRef($ref), ...rest };
  }
  if (Array.isArray(s.allOf)) {
    const parts = s.allOf.map((p) => normalize(p, resolveRef, seen));
    const { allOf: _allOf, ...rest } = s;
    s = parts.reduce(
      (acc, p) => ({
        ...acc,
        ...p,
        properties: { ...acc.properties, ...p.properties },
        required: [...(acc.required ?? []), ...(p.required ?? [])],
      }),
      rest,
    );
  }
  const union = s.anyOf ?? s.oneOf;
  if (Array.isArray(union) && union.length === 2 && union.some((m) => m.type === "null")) {
    const other = normalize(
      union.find((m) => m.type !== "null"),
      resolveRef,
      seen,
    );
    const { anyOf: _a, oneOf: _o, ...rest } = s;
    s = { ...other, ...rest, nullable: true };
  }
  if (Array.isArray(s.type)) {
    const types = s.type.filter((t) => t !== "null");
    s = { ...s, type: types.length === 1 ? types[0] : types.join("|"), ...(s.type.includes("null") && { nullable: true }) };
  }
  return s;
}

/** The facts of the operations keyguard implements, from the parsed document. */
export function distill(doc) {
  const resolveRef = (ref) => {
    if (!ref.startsWith("#/")) throw new Error(`distill-openapi: external $ref ${ref}`);
    return ref
      .slice(2)
      .split("/")
      .reduce((v, k) => v?.[k.replaceAll("~1", "/").replaceAll("~0", "~")], doc);
  };
  const operations = {};
  for (const name of OPERATIONS) {
    const post = doc.paths?.[`/v2/${name}`]?.post;
    if (post === undefined) throw new Error(`distill-openapi: the document has no POST /v2/${name}`);
    const request = post.requestBody?.content?.["application/json"]?.schema;
    const answer = normalize(post.responses?.["200"]?.content?.["application/json"]?.schema, resolveRef, new Set());
    operations[name] = { request: factsOf(request, resolveRef), response: factsOf(answer.properties?.data, resolveRef) };
  }
  return { source: SOURCE, operations };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [input, output = FACTS_FILE] = process.argv.slice(2);
  if (input === undefined) {
    console.error("usage: node scripts/distill-openapi.mjs <openapi.yaml> [out.json]");
    process.exit(2);
  }
  writeFileSync(output, `${JSON.stringify(distill(parse(readFileSync(input, "utf8"))), null, 1)}\n`);
  console.log(`distill-openapi: wrote ${output}`);
}
