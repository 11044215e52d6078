// The app every adapter serves for the conformance suite: the same routes with the same options
// (one auth instance per route), whatever the framework or runtime. Loads no node: module, so the
// Bun and Deno servers import it too. Each route answers 200 with what its handler saw.
import { GENEROUS } from "../support/time-limits";

/** Where the routes' auth instances reach the key service, and an optional shared store (Node: redisStore()). */
export interface ScenarioEnv {
  /** The key service (through the test's counting proxy). */
  readonly baseUrl: string;
  readonly rootKey: string;
  /** A loopback address where nothing listens. */
  readonly refusedUrl: string;
  /** A store for the /redis route; without one the route is not served. */
  readonly store?: unknown;
  /** Where a runtime in a process of its own makes that store itself (redisStore({ url, prefix })). */
  readonly redis?: { readonly url: string; readonly prefix: string };
}

export type GuardSpec =
  | { readonly kind: "permissions"; readonly query: string }
  | { readonly kind: "any"; readonly permissions: readonly string[] }
  | { readonly kind: "roles"; readonly roles: readonly string[] }
  /** requireKey: the key's meta.tier must be "gold". */
  | { readonly kind: "gold" };

export interface RouteSpec {
  readonly path: string;
  readonly options: Record<string, unknown>;
  readonly guard?: GuardSpec;
}

/** What the handler answers: the verified key's id, and which credential headers it could still read. */
export interface Echo {
  readonly keyId: string | null;
  readonly authorization: boolean;
  readonly xApiKey: boolean;
}

/** One reported decision, as /__decisions lists them. */
export interface ReportedDecision {
  readonly outcome: string;
  readonly status: number | null;
  readonly code: string;
  readonly source: string;
  readonly keyId: string | null;
}

const quiet = { warn() {}, error() {} };

/** The routes, with `decisions` receiving what onDecision reports on /protected. */
export function scenarioRoutes(env: ScenarioEnv, decisions: ReportedDecision[]): RouteSpec[] {
  // Time limits far above what a loaded machine needs (3 s per attempt was not, for Bun and Deno
  // beside other test files), so that only the outage tests see a 503: they use /tight, whose
  // deadline is short enough to be waited for, against a service that hangs or resets.
  const base = { rootKey: env.rootKey, baseUrl: env.baseUrl, ...GENEROUS, retry: false, logger: quiet };
  const onDecision = (d: { outcome: string; status: number | undefined; code: string; source: string; keyId: string | undefined }) => {
    decisions.push({ outcome: d.outcome, status: d.status ?? null, code: d.code, source: d.source, keyId: d.keyId ?? null });
  };
  const routes: RouteSpec[] = [
    { path: "/protected", options: { ...base, onDecision } },
    { path: "/optional", options: { ...base, optional: true } },
    { path: "/perm", options: { ...base, permissions: "docs.read" } },
    { path: "/policy", options: { ...base, policy: { NOT_FOUND: 404, DISABLED: { status: 403, error: "insufficient_scope" } } } },
    { path: "/guard/and", options: base, guard: { kind: "permissions", query: "docs.read AND docs.write" } },
    { path: "/guard/or", options: base, guard: { kind: "any", permissions: ["docs.write", "admin"] } },
    { path: "/guard/roles", options: base, guard: { kind: "roles", roles: ["admin"] } },
    { path: "/guard/gold", options: base, guard: { kind: "gold" } },
    { path: "/hidden", options: { ...base, hideCredentials: true } },
    { path: "/nocache", options: { ...base, cache: false } },
    { path: "/stale", options: { ...base, cache: { ttl: 0 }, staleIfError: 60_000 } },
    { path: "/tight", options: { ...base, timeout: 400, deadline: 800 } },
    { path: "/refused", options: { ...base, baseUrl: env.refusedUrl } },
    { path: "/open", options: { ...base, baseUrl: env.refusedUrl, onServiceError: "open" } },
    { path: "/badroot", options: { ...base, rootKey: "unkey_not_a_root_key" } },
    { path: "/checksum-off", options: { ...base, rejectBadChecksums: false } },
    { path: "/rotation", options: { ...base, rotationHeaders: { window: 3_600_000 } } },
  ];
  if (env.store !== undefined) routes.push({ path: "/redis", options: { ...base, store: env.store } });
  return routes;
}

/** The handler's answer, from the headers it received. */
export function echo(keyId: string | undefined, headers: { get(name: string): string | null }): Echo {
  return { keyId: keyId ?? null, authorization: headers.get("authorization") !== null, xApiKey: headers.get("x-api-key") !== null };
}

/** Whether a verified key is gold (the predicate of /guard/gold). */
export const isGold = (key: { meta?: Record<string, unknown> | undefined }): boolean => key.meta?.tier === "gold";
