// What each guard requires of the verified key (permissions, roles, a predicate), framework-neutral:
// the check, the 403 `insufficient_scope` it answers with, and `runGuard`, which every adapter calls.
// No service call. 401 when no key was verified.

import { optionChecks } from "../option-checks";
import { evaluatePermissionQuery, parsePermissionQuery, type PermissionQuery } from "../protocol/permission-query";
import { insufficientScopeDenial, missingKeyDenial, scopeOf, type DenialContext } from "./denials";
import { isThenable } from "./decide";
import { ConfigError, type KeyguardError } from "./errors";
import type { VerifiedKey } from "./verified-key";

export interface RequireKeyOptions {
  /** What the route requires, shown to the caller in the 403's detail. Default "This route's requirements". */
  description?: string;
}

/** A guard's requirement: `test` (sync or async), and the refusal when the key falls short. */
export interface GuardCheck<Req> {
  readonly test: (key: VerifiedKey, req: Req) => boolean | Promise<boolean>;
  readonly deny: (realm: string) => KeyguardError;
}

/**
 * Runs a guard: undefined when the request may go on, else the denial (401 without a verified key,
 * the check's 403 when the key falls short), now or as a promise. What `test` throws propagates.
 */
export function runGuard<Req>(
  check: GuardCheck<Req>,
  key: VerifiedKey | undefined,
  req: Req,
  denial: DenialContext,
): KeyguardError | undefined | Promise<KeyguardError | undefined> {
  if (key === undefined) return missingKeyDenial(denial);
  const verdict = check.test(key, req);
  if (!isThenable(verdict)) return verdict === true ? undefined : check.deny(denial.realm);
  return Promise.resolve(verdict).then((ok) => (ok === true ? undefined : check.deny(denial.realm)));
}

function parseQuery(guardName: string, query: string): PermissionQuery {
  try {
    return parsePermissionQuery(query);
  } catch (e) {
    return optionChecks(guardName, ConfigError).fail(
      "query",
      `${JSON.stringify(query)} is not a valid permission query: ${(e as Error).message}.`,
    );
  }
}

/** The verified key's permissions must satisfy a query, e.g. `"docs.read AND (docs.write OR admin)"`. */
export function permissionsCheck(query: string, guardName = "requirePermissions"): GuardCheck<unknown> {
  const parsed = parseQuery(guardName, query);
  const normalized = query.trim().replace(/\s+/g, " ");
  const scope = scopeOf(parsed);
  return {
    test: (key) => evaluatePermissionQuery(parsed, key.permissions ?? []),
    deny: (realm) => insufficientScopeDenial(realm, `This request requires the permissions: ${normalized}.`, normalized, scope),
  };
}

/** At least one of the permissions. */
export function anyPermissionCheck(permissions: readonly string[], guardName = "requireAnyPermission"): GuardCheck<unknown> {
  const check = optionChecks(guardName, ConfigError);
  if (permissions.length === 0) check.fail("permissions", `name at least one permission, e.g. ${guardName}("docs.read").`);
  for (const p of permissions) {
    if (typeof p !== "string" || parseQuery(guardName, p).type !== "permission") {
      check.fail("permissions", `${JSON.stringify(p)} is not a single permission name.`);
    }
  }
  const query = permissions.join(" OR ");
  // A scope only for a single permission: no scope-token list can say "one of".
  const scope = scopeOf(parseQuery(guardName, query));
  const wanted = [...permissions];
  return {
    test: (key) => {
      const granted = new Set(key.permissions ?? []);
      return wanted.some((p) => granted.has(p));
    },
    deny: (realm) => insufficientScopeDenial(realm, `This request requires one of the permissions: ${wanted.join(", ")}.`, query, scope),
  };
}

/** Every one of the roles. */
export function rolesCheck(roles: readonly string[], guardName = "requireRoles"): GuardCheck<unknown> {
  if (roles.length === 0 || roles.some((r) => typeof r !== "string" || r === "")) {
    optionChecks(guardName, ConfigError).fail("roles", `name one or more roles as non-empty strings, got ${JSON.stringify(roles)}.`);
  }
  const wanted = [...roles];
  return {
    test: (key) => {
      const held = new Set(key.roles ?? []);
      return wanted.every((r) => held.has(r));
    },
    deny: (realm) => insufficientScopeDenial(realm, `This request requires the roles: ${wanted.join(", ")}.`),
  };
}

/** `predicate(key, req)` (sync or async) must return true. */
export function keyCheck<Req>(
  predicate: (key: VerifiedKey, req: Req) => boolean | Promise<boolean>,
  options: RequireKeyOptions = {},
  guardName = "requireKey",
): GuardCheck<Req> {
  const check = optionChecks(guardName, ConfigError);
  if (typeof predicate !== "function") check.invalid("predicate", predicate, "Pass a function (key, req) => boolean.");
  const description = check.string("description", options.description, {
    pattern: /./,
    default: "This route's requirements",
    fix: "Use a non-empty string.",
  });
  return { test: predicate, deny: (realm) => insufficientScopeDenial(realm, `The API key does not meet: ${description}.`) };
}
