// Where keyguard's contract deliberately differs from production's OpenAPI document, and why.
// test/protocol/openapi-comparison.test.ts fails on any other difference, and on an entry here
// that no longer differs.

export interface DeliberateDifference {
  /** An operation, or `*` for every operation. */
  operation: string;
  /** `request.<field path>` or `response.<field path>` (the answer's `data`); a trailing `*` matches every path it starts. */
  path: string;
  /** The fact that differs: a JSON Schema keyword, `required`, `nullable`, or `present`. */
  fact: string;
  /** Production's value and keyguard's; left out by an entry that covers many paths. */
  production?: unknown;
  keyguard?: unknown;
  why: string;
}

const ANSWERS_ARE_SHAPES =
  "keyguard's answer schemas describe shapes, not production's limits: they type the client and console, and the client checks " +
  "answers by them, so a limit there could only make a client refuse a good answer.";

const LIST_CURSOR = "keyguard's cursors are the next page's first id: 1..255 characters, refused otherwise (today's behaviour).";

export const DELIBERATE_DIFFERENCES: readonly DeliberateDifference[] = [
  // Every operation.
  {
    operation: "*",
    path: "request*",
    fact: "additionalProperties",
    production: "unset",
    keyguard: false,
    why: 'keyguard refuses an unknown field in every request object ("is not a known field"); the document leaves these objects open.',
  },
  {
    operation: "*",
    path: "request*",
    fact: "maximum",
    production: 9223372036854776000,
    keyguard: null,
    why: "Integers must be safe JavaScript integers (up to 2^53 - 1, checked by the walker); production's int64 bound is not a number JSON carries exactly.",
  },
  {
    operation: "*",
    path: "response*",
    fact: "additionalProperties",
    production: false,
    keyguard: "unset",
    why: "A client must tolerate the fields of a newer server: answers are never refused for a field keyguard does not know.",
  },
  ...(["minLength", "maxLength", "pattern", "minimum", "maximum", "maxItems", "maxProperties"] as const).map((fact) => ({
    operation: "*",
    path: "response*",
    fact,
    why: ANSWERS_ARE_SHAPES,
  })),
  // keys.*
  {
    operation: "keys.verifyKey",
    path: "request.ratelimits",
    fact: "maxItems",
    production: null,
    keyguard: 50,
    why: "keyguard bounds the work of one verification: at most 50 rate limits, as on a key.",
  },
  {
    operation: "keys.verifyKey",
    path: "request.ratelimits[].limit",
    fact: "minimum",
    production: 0,
    keyguard: 1,
    why: "An inline limit of 0 would refuse every request; keyguard refuses it at validation (and apiKeyAuth() at creation) instead.",
  },
  {
    operation: "keys.verifyKey",
    path: "request.ratelimits[].duration",
    fact: "minimum",
    production: 0,
    keyguard: 1000,
    why: "Windows are at least a second, as for the rate limits stored on keys (`duration (ms, ≥1000)`).",
  },
  {
    operation: "keys.verifyKey",
    path: "response.code",
    fact: "enum",
    production: ["VALID", "NOT_FOUND", "FORBIDDEN", "INSUFFICIENT_PERMISSIONS", "USAGE_EXCEEDED", "RATE_LIMITED", "DISABLED", "EXPIRED"],
    keyguard: null,
    why: "The list of codes is open: a client treats a code it does not know as invalid rather than refusing the answer.",
  },
  ...["request.remaining", "request.refill", "request.refill.interval", "request.refill.amount", "request.refill.refillDay"].map(
    (path) => ({
      operation: "keys.createKey",
      path,
      fact: "present",
      production: false,
      keyguard: true,
      why: "The specification's flat credit fields: keyguard accepts them or the nested `credits`, not both (the client sends `credits`).",
    }),
  ),
  {
    operation: "permissions.createPermission",
    path: "request.slug",
    fact: "required",
    production: true,
    keyguard: null,
    why: "The specification creates a permission with `{ name, description }`: without a slug, keyguard derives it from the name.",
  },
  // keyguard's own settings: checksummed keys, per-key IP allow-lists, an API's settings. Set in
  // requests; answered by keyguard's own apis.getApiSettings and keys.getKeySettings, never in the
  // answers of production's operations (test/protocol/openapi-answers.test.ts).
  ...[
    { operation: "keys.createKey", path: "request.ipWhitelist" },
    { operation: "keys.updateKey", path: "request.ipWhitelist" },
  ].flatMap(({ operation, path }) =>
    [path, `${path}[]`].map((p) => ({
      operation,
      path: p,
      fact: "present",
      production: false,
      keyguard: true,
      why: "keyguard's per-key IP allow-list (addresses or CIDR ranges), checked beside the API's `ipWhitelist` (docs/compatibility.md).",
    })),
  ),
  {
    operation: "apis.createApi",
    path: "request.keyFormat",
    fact: "present",
    production: false,
    keyguard: true,
    why: 'keyguard\'s key formats: "plain" (production\'s, the default) or "checksummed", refused offline when mistyped (docs/security.md).',
  },
  // Leak response (secret scanning; docs/security.md).
  {
    operation: "apis.createApi",
    path: "request.leakResponse",
    fact: "present",
    production: false,
    keyguard: true,
    why: 'keyguard\'s own: what a secret-scanning report of one of the API\'s keys does, "disable" (the default) or "flag".',
  },
  ...[
    { operation: "apis.createApi", path: "request.creditsLowThreshold" },
    { operation: "keys.createKey", path: "request.creditsLowThreshold" },
    { operation: "keys.updateKey", path: "request.creditsLowThreshold" },
  ].map(({ operation, path }) => ({
    operation,
    path,
    fact: "present",
    production: false,
    keyguard: true,
    why: "keyguard's own: the remaining credits at or below which a charge sends the key.credits_low webhook event, an API's or a key's own (docs/events.md).",
  })),
  // Paging and search.
  {
    operation: "apis.listKeys",
    path: "request.search",
    fact: "present",
    production: false,
    keyguard: true,
    why: "keyguard's own: only keys whose id, name or start contains the text, so that a console searches every key of an API, not the ones loaded.",
  },
  {
    operation: "apis.listKeys",
    path: "request.sort",
    fact: "present",
    production: false,
    keyguard: true,
    why: "keyguard's own: keys ordered by name, start, createdAt, expires or credits (then id), so that a console sorts every key of an API, not the ones loaded.",
  },
  ...["request.sort.by", "request.sort.order"].map((path) => ({
    operation: "apis.listKeys",
    path,
    fact: "present",
    production: false,
    keyguard: true,
    why: "keyguard's own sort: the column (name, start, createdAt, expires or credits) and the direction (asc, the default, or desc).",
  })),
  { operation: "apis.listKeys", path: "request.cursor", fact: "minLength", production: null, keyguard: 1, why: LIST_CURSOR },
  {
    operation: "apis.listKeys",
    path: "request.cursor",
    fact: "maxLength",
    production: null,
    keyguard: 2048,
    why: "A sorted listing's cursor carries the next key's sort value (a name of up to 255 characters) with its id; 1..2048 characters.",
  },
  ...["identities.listIdentities", "ratelimit.listOverrides"].flatMap((operation) => [
    { operation, path: "request.cursor", fact: "minLength", production: null, keyguard: 1, why: LIST_CURSOR },
    { operation, path: "request.cursor", fact: "maxLength", production: null, keyguard: 255, why: LIST_CURSOR },
  ]),
  ...["permissions.listPermissions", "permissions.listRoles"].flatMap((operation) => [
    { operation, path: "request.cursor", fact: "minLength", production: null, keyguard: 1, why: LIST_CURSOR },
    { operation, path: "request.cursor", fact: "maxLength", production: 1024, keyguard: 255, why: LIST_CURSOR },
  ]),
  ...["permissions.listPermissions", "permissions.listRoles", "identities.listIdentities"].flatMap((operation) => [
    {
      operation,
      path: "request.search",
      fact: "minLength",
      production: null,
      keyguard: 1,
      why: "An empty search is refused like every empty string field (omit it to list everything).",
    },
    {
      operation,
      path: "request.search",
      fact: "maxLength",
      production: 256,
      keyguard: 255,
      why: "keyguard's limit on searches, kept as it is; aligning it with production's 256 would change which requests are refused.",
    },
  ]),
  // Others.
  {
    operation: "identities.deleteIdentity",
    path: "response",
    fact: "type",
    production: null,
    keyguard: "object",
    why: "The document gives deleteIdentity's answer no `data`; keyguard answers `data: {}` like every other delete.",
  },
  {
    operation: "identities.deleteIdentity",
    path: "response",
    fact: "additionalProperties",
    production: null,
    keyguard: "unset",
    why: "As above: no `data` in the document.",
  },
  {
    operation: "analytics.getVerifications",
    path: "request.query",
    fact: "maxLength",
    production: null,
    keyguard: 1000000,
    why: "A bound on what is read before parsing; the query's real limit is checked by the parser (invalid_analytics_query), as production does.",
  },
];
