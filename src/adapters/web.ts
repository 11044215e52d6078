// `webApiKeyAuth()`: the decision core for a standard `Request` (Next.js middleware and route
// handlers, Bun.serve, Deno.serve, Cloudflare Workers, Hono): admitted or let through, a result;
// denied, the problem+json `Response`. Web Crypto hashes, `fetch` reaches the key service, answers
// are kept in memory (or a shared store); no node: module is loaded on this path.

import { createFetchClient } from "../client/fetch-client";
import { ConfigError } from "../config-error";
import { optionChecks } from "../option-checks";
import { invalidateAll, invalidateKeyHash, invalidateKeyId } from "../protocol/invalidation-message";
import { webKeyHash } from "../protocol/key-hash-web";
import { rememberedKeyHash } from "./key-hash-memo";
import {
  anyPermissionCheck,
  createDecisionCore,
  DEFAULT_DENIAL,
  frozenKey,
  isAdmitted,
  isThenable,
  keyCheck,
  parseAuthOptions,
  PASS,
  permissionsCheck,
  problemAnswer,
  rolesCheck,
  runGuard,
  type AuthOptions,
  type Decision,
  type DecisionRequest,
  type DenialContext,
  type GuardCheck,
  type KeyguardError,
  type RequireKeyOptions,
  type VerifiedKey,
} from "../middleware";

/** The options of {@link webApiKeyAuth}: those of `apiKeyAuth()`, where `req` is the `Request`. */
export type WebApiKeyAuthOptions = AuthOptions<Request>;

/** A request that may go on. */
export interface WebAuthResult {
  /** The verified key; undefined when let through without one (optional auth, a CORS preflight, failing open). */
  readonly apiKey: VerifiedKey | undefined;
  /**
   * Headers to add to your response: RateLimit and RateLimit-Policy when the verification reported
   * rate limits; undefined when there are none, so that `Response.json(body, { headers: result.headers })`
   * makes no Headers object (on @hono/node-server an empty one alone costs a request several µs).
   */
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** The request to hand on: the one given, or with `hideCredentials` a copy without the headers that carried the key. */
  readonly request: Request;
}

/** The function returned by {@link webApiKeyAuth}. */
export interface WebApiKeyAuth {
  /** The result when the request may go on; the denial's `Response` otherwise. Rejects only when `getKey` or an option function throws. */
  (request: Request): Promise<WebAuthResult | Response>;
  /**
   * The same answer, at once where no promise is needed: a cached key's request, and a request
   * denied for its headers alone; a promise otherwise. For a fetch handler that may return either
   * a `Response` or a promise of one (`Bun.serve`, `Deno.serve`, `@hono/node-server`): a cached
   * key's request then costs no promise, nor on `@hono/node-server` its slower path for an answer
   * that comes in one. Throws (or rejects) only when `getKey` or an option function throws.
   */
  decide(request: Request): WebAuthResult | Response | Promise<WebAuthResult | Response>;
  /** Forgets every answer kept for a key (cached and `staleIfError`), here and with a shared store on every instance. */
  invalidate(key: string): Promise<void>;
  /** The same for a key known by its id. */
  invalidateKeyId(keyId: string): Promise<void>;
  /** Forgets every answer, here and with a shared store on every instance. */
  clear(): Promise<void>;
}

/** What a guard needs of a request its auth saw: the verified key, and the denial conventions. */
interface Seen {
  readonly key: VerifiedKey | undefined;
  readonly denial: DenialContext;
}

// Kept as a property of the request (a WeakMap entry per request costs more, in the garbage
// collector too); in a WeakMap for a request that takes no property (a frozen one).
const SEEN = Symbol("keyguard.seen");
type Marked = Request & { [SEEN]?: Seen };
const seenFrozen = new WeakMap<Request, Seen>();

function remember(request: Request, what: Seen): void {
  if (Object.isExtensible(request)) (request as Marked)[SEEN] = what;
  else seenFrozen.set(request, what);
}

function recall(request: Request): Seen | undefined {
  return (request as Marked)[SEEN] ?? seenFrozen.get(request);
}

/** The denial as a Response: its status and headers, `Cache-Control: no-store`, the problem+json body. */
export function problemResponse(err: KeyguardError): Response {
  const answer = problemAnswer(err);
  return new Response(answer.body, { status: answer.status, headers: answer.headers });
}

/** The headers the core reads, from a `Request`: `Headers` joins a repeated header into one value. */
interface WebView extends DecisionRequest {
  hidden?: readonly string[];
}

function viewOf(request: Request, keyHeader: string | undefined): WebView {
  const h = request.headers;
  const method = request.method;
  const headers: Record<string, string | undefined> = { authorization: h.get("authorization") ?? undefined };
  if (keyHeader !== undefined) headers[keyHeader] = h.get(keyHeader) ?? undefined;
  // What tells a CORS preflight (isPreflight), read only for an OPTIONS request.
  if (method === "OPTIONS") {
    headers.origin = h.get("origin") ?? undefined;
    headers["access-control-request-method"] = h.get("access-control-request-method") ?? undefined;
  }
  return { method, headers };
}

function withoutHeaders(request: Request, names: readonly string[]): Request {
  const headers = new Headers(request.headers);
  for (const name of names) headers.delete(name);
  return new Request(request, { headers });
}

/**
 * The request as Node parsed it, where a Web server on Node lends it (`@hono/node-server`'s
 * `c.env.incoming`): its headers are read there, without building the `Request`'s `Headers`.
 */
export interface NodeRequestLike {
  readonly method?: string | undefined;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly rawHeaders?: readonly string[];
  /** The connection: a keep-alive client's key is hashed once per connection. */
  readonly socket?: unknown;
}

/** `value` when it has the shape of a Node `IncomingMessage`'s method and headers, else undefined. */
export function asNodeRequest(value: unknown): NodeRequestLike | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as { method?: unknown; headers?: unknown; rawHeaders?: unknown };
  return typeof v.method === "string" && typeof v.headers === "object" && v.headers !== null && Array.isArray(v.rawHeaders)
    ? (value as NodeRequestLike)
    : undefined;
}

/** The decision for a request as a result or a Response, and the invalidation methods: what the Web adapters share. */
export interface WebDecider<Req> {
  /**
   * Synchronous when a kept answer decides; a promise otherwise. Throws (or rejects) only when
   * `getKey` or an option function throws. `node`: the same request as Node parsed it, if the
   * server lends it; its headers are read instead of `request`'s.
   */
  (req: Req, request: Request, node?: NodeRequestLike): WebAuthResult | Response | Promise<WebAuthResult | Response>;
  invalidate(key: string): Promise<void>;
  invalidateKeyId(keyId: string): Promise<void>;
  clear(): Promise<void>;
}

/**
 * The core over a `Request`, for an adapter whose option functions (`getKey`, `permissions`,
 * `onDecision`, …) receive `Req` (the Request itself, or a framework's context). `name` is the
 * adapter's, for the options only Express takes.
 */
export function webDecider<Req>(options: AuthOptions<Req> | undefined, name: string): WebDecider<Req> {
  const given = options as Record<string, unknown> | undefined;
  for (const option of ["onDenied", "passErrors"]) {
    if (typeof given === "object" && given !== null && given[option] !== undefined) {
      optionChecks(name, ConfigError).fail(
        option,
        `${option} is apiKeyAuth()'s (Express/Connect); ${name}() answers a denial with its problem+json Response.`,
      );
    }
  }
  const config = parseAuthOptions<Req, never>(options, createFetchClient);
  const keyHeader = config.extract.header;
  // Per connection where a server on Node lends the socket (`node`), else among the last keys hashed.
  const hash = rememberedKeyHash(webKeyHash);
  const core = createDecisionCore(config, {
    hash,
    present: frozenKey,
    hide: (_req, view, names) => {
      (view as WebView).hidden = names;
    },
  });
  const settle = (decision: Decision, request: Request, view: WebView): WebAuthResult | Response => {
    if (decision !== PASS && !isAdmitted(decision)) {
      remember(request, { key: undefined, denial: core.denial });
      return problemResponse(decision);
    }
    const apiKey = decision === PASS ? undefined : decision;
    const forward = view.hidden === undefined ? request : withoutHeaders(request, view.hidden);
    const record: Seen = { key: apiKey, denial: core.denial };
    remember(request, record);
    if (forward !== request) remember(forward, record);
    return { apiKey, headers: apiKey === undefined ? undefined : core.admitHeaders(apiKey), request: forward };
  };
  // Not an async function: a kept answer (with the hash computed synchronously) settles at once.
  const decide = (req: Req, request: Request, node?: NodeRequestLike): WebAuthResult | Response | Promise<WebAuthResult | Response> => {
    // Node's own header object (what the Node adapters read): building the Request's Headers from
    // the raw headers, and hashing without the connection's memo, cost a cached key's request about
    // a tenth more CPU.
    const view: WebView =
      node === undefined
        ? viewOf(request, keyHeader)
        : { method: node.method, headers: node.headers, rawHeaders: node.rawHeaders, socket: node.socket };
    const decision = core.decide(req, view);
    return isThenable(decision) ? decision.then((d) => settle(d, request, view)) : settle(decision, request, view);
  };
  return Object.assign(decide, {
    invalidate: async (key: string) => core.invalidate(invalidateKeyHash(await webKeyHash(key))),
    invalidateKeyId: (keyId: string) => core.invalidate(invalidateKeyId(keyId)),
    clear: () => core.invalidate(invalidateAll()),
  });
}

/**
 * Protects a `fetch`-style handler with API keys verified by the key service.
 *
 * ```ts
 * const auth = webApiKeyAuth({ rootKey, baseUrl });
 * const result = await auth(request);
 * if (result instanceof Response) return result; // the denial
 * result.apiKey?.keyId;
 * ```
 */
export function webApiKeyAuth(options?: WebApiKeyAuthOptions): WebApiKeyAuth {
  const decide = webDecider<Request>(options, "webApiKeyAuth");
  const auth = (request: Request): Promise<WebAuthResult | Response> => {
    try {
      const result = decide(request, request);
      return isThenable(result) ? result : Promise.resolve(result);
    } catch (e) {
      return Promise.reject(e);
    }
  };
  return Object.assign(auth, {
    decide: (request: Request) => decide(request, request),
    invalidate: decide.invalidate,
    invalidateKeyId: decide.invalidateKeyId,
    clear: decide.clear,
  });
}

/** A guard for a request `webApiKeyAuth()` let through: undefined when it may go on, else the denial's Response. */
export type WebGuard = (request: Request) => Promise<Response | undefined>;

/**
 * Runs a guard for a request a Web adapter saw (`request`), its option functions given `req`:
 * undefined when it may go on, else the denial's Response.
 */
export async function guardResponse<Req>(check: GuardCheck<Req>, req: Req, request: Request): Promise<Response | undefined> {
  const found = recall(request);
  const denial = await runGuard(check, found?.key, req, found?.denial ?? DEFAULT_DENIAL);
  return denial === undefined ? undefined : problemResponse(denial);
}

const webGuard =
  (check: GuardCheck<Request>): WebGuard =>
  (request) =>
    guardResponse(check, request, request);

/** The key seen by `webApiKeyAuth()` for this request (or the copy it handed on), if any. */
export function getApiKey(request: Request): VerifiedKey | undefined {
  return recall(request)?.key;
}

/** Requires the verified key's permissions to satisfy a query, e.g. `"docs.read AND (docs.write OR admin)"`. */
export const requirePermissions = (query: string): WebGuard => webGuard(permissionsCheck(query));
/** Requires at least one of the permissions. */
export const requireAnyPermission = (...permissions: string[]): WebGuard => webGuard(anyPermissionCheck(permissions));
/** Requires every one of the roles. */
export const requireRoles = (...roles: string[]): WebGuard => webGuard(rolesCheck(roles));
/** Requires `predicate(key, request)` (sync or async) to return true; what it throws rejects. */
export const requireKey = (
  predicate: (key: VerifiedKey, request: Request) => boolean | Promise<boolean>,
  options?: RequireKeyOptions,
): WebGuard => webGuard(keyCheck(predicate, options));
