// Per-route guards over the key `apiKeyAuth()` already verified: permissions, roles, predicates.
// No service call. 401 when no key was verified, 403 `insufficient_scope` when the key falls short.

import type { IncomingMessage, ServerResponse } from "node:http";
import { optionChecks } from "../option-checks";
import { evaluatePermissionQuery, parsePermissionQuery, type PermissionQuery } from "../protocol/permission-query";
import { getApiKey, type VerifiedKey } from "./augment";
import { insufficientScopeDenial, missingKeyDenial, scopeOf } from "./denials";
import { ConfigError, type KeyguardError } from "./errors";
import type { NextFunction } from "./options";
import { failOnce, isThenable, once, responderOf } from "./respond";

/** A guard: Express/Connect middleware. */
export type Guard<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse> = (
  req: Req,
  res: Res,
  next: NextFunction,
) => void;

export interface RequireKeyOptions {
  /** What the route requires, shown to the caller in the 403's detail. Default "This route's requirements". */
  description?: string;
}

type Check<Req> = (key: VerifiedKey, req: Req) => boolean | Promise<boolean>;

function guard<Req extends IncomingMessage, Res extends ServerResponse>(
  check: Check<Req>,
  deny: (realm: string) => KeyguardError,
): Guard<Req, Res> {
  return (req, res, next) => {
    const responder = responderOf(req);
    const n = once(next);
    const key = getApiKey(req);
    if (key === undefined) {
      return responder.deny(missingKeyDenial(responder.denial), req, res, n);
    }
    let verdict: boolean | Promise<boolean>;
    try {
      verdict = check(key, req);
    } catch (e) {
      return n(e);
    }
    if (!isThenable(verdict)) {
      // Synchronous: next() outside any try, so a later handler's throw propagates to our caller.
      if (verdict === true) return n();
      return responder.deny(deny(responder.denial.realm), req, res, n);
    }
    Promise.resolve(verdict)
      .then(
        (ok) => (ok === true ? n() : responder.deny(deny(responder.denial.realm), req, res, n)),
        (e: unknown) => n(e),
      )
      .catch((e: unknown) => failOnce(n, e, responder.reportLateError));
  };
}

function parseQuery(guardName: string, query: string): PermissionQuery {
  try {
    return parsePermissionQuery(query);
  } catch (e) {
    return optionChecks(guardName, ConfigError).fail("query", `${JSON.stringify(query)} is not a valid permission query: ${(e as Error).message}.`);
  }
}

/** Requires the verified key's permissions to satisfy a query, e.g. `"docs.read AND (docs.write OR admin)"`. */
export function requirePermissions<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  query: string,
): Guard<Req, Res> {
  const parsed = parseQuery("requirePermissions", query);
  const normalized = query.trim().replace(/\s+/g, " ");
  const scope = scopeOf(parsed);
  return guard<Req, Res>(
    (key) => evaluatePermissionQuery(parsed, key.permissions ?? []),
    (realm) => insufficientScopeDenial(realm, `This request requires the permissions: ${normalized}.`, normalized, scope),
  );
}

/** Requires at least one of the permissions. */
export function requireAnyPermission<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  ...permissions: string[]
): Guard<Req, Res> {
  const check = optionChecks("requireAnyPermission", ConfigError);
  if (permissions.length === 0) check.fail("permissions", 'name at least one permission, e.g. requireAnyPermission("docs.read").');
  for (const p of permissions) {
    if (typeof p !== "string" || parseQuery("requireAnyPermission", p).type !== "permission") {
      check.fail("permissions", `${JSON.stringify(p)} is not a single permission name.`);
    }
  }
  const query = permissions.join(" OR ");
  // A scope only for a single permission: no scope-token list can say "one of".
  const scope = scopeOf(parseQuery("requireAnyPermission", query));
  return guard<Req, Res>(
    (key) => {
      const granted = new Set(key.permissions ?? []);
      return permissions.some((p) => granted.has(p));
    },
    (realm) => insufficientScopeDenial(realm, `This request requires one of the permissions: ${permissions.join(", ")}.`, query, scope),
  );
}

/** Requires every one of the roles. */
export function requireRoles<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  ...roles: string[]
): Guard<Req, Res> {
  if (roles.length === 0 || roles.some((r) => typeof r !== "string" || r === "")) {
    optionChecks("requireRoles", ConfigError).fail("roles", `name one or more roles as non-empty strings, got ${JSON.stringify(roles)}.`);
  }
  return guard<Req, Res>(
    (key) => {
      const held = new Set(key.roles ?? []);
      return roles.every((r) => held.has(r));
    },
    (realm) => insufficientScopeDenial(realm, `This request requires the roles: ${roles.join(", ")}.`),
  );
}

/** Requires `predicate(key, req)` (sync or async) to return true; an error it throws goes to `next(err)`. */
export function requireKey<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  predicate: (key: VerifiedKey, req: Req) => boolean | Promise<boolean>,
  options: RequireKeyOptions = {},
): Guard<Req, Res> {
  const check = optionChecks("requireKey", ConfigError);
  if (typeof predicate !== "function") check.invalid("predicate", predicate, "Pass a function (key, req) => boolean.");
  const description = check.string("description", options.description, { pattern: /./, default: "This route's requirements", fix: "Use a non-empty string." });
  return guard<Req, Res>(predicate, (realm) =>
    insufficientScopeDenial(realm, `The API key does not meet: ${description}.`),
  );
}
