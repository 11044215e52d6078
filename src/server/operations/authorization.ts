// The forms of authorisation operations declare (`authorize:` in `defineOperation`): a workspace
// permission, an action on an API, on a key's API or on a rate-limit namespace, and what each
// hands to `run`. The order of 403 and 404 in each is production's.
import { failsChecksum } from "../../protocol/key-checksum";
import { canOnApi, maskedRefusal, requireOnApi, requirePermission, type RootContext } from "./auth";
import { creditsAt } from "../domain/credits";
import { ServiceError } from "../errors";
import { keyHash } from "../../protocol/key-hash";
import { apiNotFound, findApi, findKey } from "./lookup";
import { requireNamespace } from "./namespaces";
import type { Authorization, OpContext } from "./operation";
import type { ApiRecord, KeyRecord, RatelimitNamespaceRecord } from "../records";

/** An authorisation decided from the root key alone (no store), described by `permission`. */
export function fromRoot<Body, Resource>(
  permission: string,
  check: (root: RootContext, body: Body) => Resource,
): Authorization<Body, Resource> {
  return { permission, reads: false, check };
}

/** An authorisation that reads the store, in the operation's transaction. */
export function fromStore<Body, Resource>(
  permission: string,
  check: (ctx: OpContext, body: Body) => Promise<Resource>,
): Authorization<Body, Resource> {
  return { permission, reads: true, check };
}

/** 403 unless the root key holds `tuple` ("Missing one of these permissions: <tuple>"). */
export function permission(tuple: string): Authorization<unknown, undefined> {
  return fromRoot(tuple, (root) => {
    requirePermission(root, [tuple]);
    return undefined;
  });
}

/** `first`, then `second`, in this order; `run` gets what `second` resolved. */
export function both<Body, Resource>(
  first: Authorization<Body, unknown>,
  second: Authorization<Body, Resource>,
): Authorization<Body, Resource> {
  const permission = `${first.permission} and ${second.permission}`;
  if (!first.reads && !second.reads) {
    return fromRoot(permission, (root, body) => {
      first.check(root, body);
      return second.check(root, body);
    });
  }
  const run = (a: Authorization<Body, unknown>, ctx: OpContext, body: Body) => (a.reads ? a.check(ctx, body) : a.check(ctx.root, body));
  return fromStore(permission, async (ctx, body) => {
    await run(first, ctx, body);
    return (await run(second, ctx, body)) as Resource;
  });
}

/** Which APIs the root key may do one action on; the operation masks or filters the others. */
export type ApiGrant = (apiId: string) => boolean;

/** Never refuses: resolves which APIs the root key may do `action` on (`api.*.action` or `api.<apiId>.action`). */
export function grantOnApis(action: string): Authorization<unknown, ApiGrant> {
  return fromRoot(`api.<apiId>.${action}`, (root) => (apiId: string) => canOnApi(root, action, apiId));
}

/**
 * keys.verifyKey's: 403 for a root key that may verify keys of no API at all (before any lookup),
 * else which APIs it may verify keys of; a key of another API is `NOT_FOUND`, as production masks it.
 */
export function verifyGrant(): Authorization<unknown, ApiGrant> {
  return fromRoot("api.<apiId>.verify_key (403 without any)", (root) => {
    if (!verifiesAny(root.permissions)) requirePermission(root, ["api.*.verify_key", "api.<apiId>.verify_key"]);
    return (apiId: string) => canOnApi(root, "verify_key", apiId);
  });
}

/** Whether a permission set holds any `api.<id|*>.verify_key`, per set (authentication reuses a root key's set). */
const VERIFIES_ANY = new WeakMap<ReadonlySet<string>, boolean>();
function verifiesAny(permissions: ReadonlySet<string>): boolean {
  let any = VERIFIES_ANY.get(permissions);
  if (any === undefined) {
    any = false;
    for (const p of permissions) if (p.startsWith("api.") && p.endsWith(".verify_key")) any = true;
    VERIFIES_ANY.set(permissions, any);
  }
  return any;
}

interface OnApiOptions<Body> {
  /**
   * Production masks a refusal as "not found": without every action of `actions`, the answer is
   * this error (the same as for a missing API), never a 403.
   */
  masked?: (apiId: string) => ServiceError;
  /** A further action the request asks for (`decrypt_key` for `decrypt: true`): 403 without it, once the API is found. */
  also?: (body: Body) => string | false | undefined;
}

/**
 * The API of the request, which the root key must be allowed `actions` on: 403 without them
 * (or the `masked` 404), then 404 when it is missing. `run` gets the API.
 */
export function onApi<Body>(
  actions: string | readonly string[],
  apiIdOf: (body: Body) => string,
  options: OnApiOptions<Body> = {},
): Authorization<Body, ApiRecord> {
  const all = typeof actions === "string" ? [actions] : actions;
  const { masked, also } = options;
  const described = all.map((a) => `api.<apiId>.${a}`).join(" and ") + (masked ? " (else 404)" : "");
  return fromStore(described, async ({ tx, root }, body) => {
    const apiId = apiIdOf(body);
    if (masked) {
      if (!all.every((a) => canOnApi(root, a, apiId))) throw maskedRefusal(masked(apiId));
    } else {
      for (const a of all) requireOnApi(root, a, apiId, true);
    }
    const api = await findApi(tx, root.workspaceId, apiId);
    if (!api) throw (masked ?? apiNotFound)(apiId);
    const further = also?.(body);
    if (further) requireOnApi(root, further, api.id);
    return api;
  });
}

/**
 * The key of the request, by id: 404 when missing, then 403 unless the root key may do `action`
 * on its API (and `also`, asked for by the request or the key). `run` gets the key with its
 * credits as they stand now (a refill that fell due applied; written when the handler writes the key).
 */
export function onKey<Body>(
  action: string,
  keyIdOf: (body: Body) => string,
  also?: (body: Body, key: KeyRecord) => string | false | undefined,
): Authorization<Body, KeyRecord> {
  return fromStore(`api.<the key's apiId>.${action}`, async ({ tx, root, now }, body) => {
    const key = await findKey(tx, root.workspaceId, keyIdOf(body));
    requireOnApi(root, action, key.apiId);
    const further = also?.(body, key);
    if (further) requireOnApi(root, further, key.apiId);
    if (key.credits) key.credits = creditsAt(key.credits, now);
    return key;
  });
}

/** The key given in plaintext, which the root key may do `action` on; else 404, as production masks it. */
export function onKeyByPlaintext<Body>(action: string, plaintextOf: (body: Body) => string): Authorization<Body, KeyRecord> {
  return fromStore(`api.<the key's apiId>.${action} (else 404)`, async ({ tx, root }, body) => {
    const notFound = () => new ServiceError("data.key_not_found", "The specified key was not found.");
    // A key of the checksummed format whose checksum fails was never issued: no lookup.
    if (failsChecksum(plaintextOf(body))) throw notFound();
    const key = await tx.keyByHash(keyHash(plaintextOf(body)));
    if (!key || key.workspaceId !== root.workspaceId) throw notFound();
    if (!canOnApi(root, action, key.apiId)) throw maskedRefusal(notFound());
    return key;
  });
}

/**
 * The rate-limit namespace of the request (by id or name): 404 when missing, then 403 unless the
 * root key holds `ratelimit.<namespaceId>.action` or `ratelimit.*.action` (or the `masked` error).
 * `run` gets the namespace.
 */
export function onNamespace<Body extends { namespace: string }>(
  action: string,
  masked?: () => ServiceError,
): Authorization<Body, RatelimitNamespaceRecord> {
  return fromStore(`ratelimit.<namespaceId>.${action}${masked ? " (else 404)" : ""}`, async ({ tx, root }, body) => {
    const ns = await requireNamespace(tx, root.workspaceId, body.namespace);
    const anyOf = [`ratelimit.${ns.id}.${action}`, `ratelimit.*.${action}`];
    if (masked && !anyOf.some((p) => root.permissions.has(p))) throw maskedRefusal(masked());
    requirePermission(root, anyOf);
    return ns;
  });
}
