// Per-route guards over the key `apiKeyAuth()` already verified, as Express/Connect middleware: the
// checks (guard-checks.ts) every adapter shares, answered with the responder of that apiKeyAuth().

import type { IncomingMessage, ServerResponse } from "node:http";
import { getApiKey, type VerifiedKey } from "./augment";
import type { KeyguardError } from "./errors";
import {
  anyPermissionCheck,
  keyCheck,
  permissionsCheck,
  rolesCheck,
  runGuard,
  type GuardCheck,
  type RequireKeyOptions,
} from "./guard-checks";
import type { NextFunction } from "./options";
import { failOnce, isThenable, once, responderOf } from "./respond";

/** A guard: Express/Connect middleware. */
export type Guard<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse> = (
  req: Req,
  res: Res,
  next: NextFunction,
) => void;

export type { RequireKeyOptions };

/** Express/Connect middleware over a framework-neutral check (guard-checks.ts). */
function guard<Req extends IncomingMessage, Res extends ServerResponse>(check: GuardCheck<Req>): Guard<Req, Res> {
  return (req, res, next) => {
    const responder = responderOf(req);
    const n = once(next);
    let verdict: KeyguardError | undefined | Promise<KeyguardError | undefined>;
    try {
      verdict = runGuard(check, getApiKey(req), req, responder.denial);
    } catch (e) {
      return n(e);
    }
    if (!isThenable(verdict)) {
      // Synchronous: next() outside any try, so a later handler's throw propagates to our caller.
      if (verdict === undefined) return n();
      return responder.deny(verdict, req, res, n);
    }
    Promise.resolve(verdict)
      .then(
        (denial) => (denial === undefined ? n() : responder.deny(denial, req, res, n)),
        (e: unknown) => n(e),
      )
      .catch((e: unknown) => failOnce(n, e, responder.reportLateError));
  };
}

/** Requires the verified key's permissions to satisfy a query, e.g. `"docs.read AND (docs.write OR admin)"`. */
export function requirePermissions<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  query: string,
): Guard<Req, Res> {
  return guard<Req, Res>(permissionsCheck(query));
}

/** Requires at least one of the permissions. */
export function requireAnyPermission<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  ...permissions: string[]
): Guard<Req, Res> {
  return guard<Req, Res>(anyPermissionCheck(permissions));
}

/** Requires every one of the roles. */
export function requireRoles<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  ...roles: string[]
): Guard<Req, Res> {
  return guard<Req, Res>(rolesCheck(roles));
}

/** Requires `predicate(key, req)` (sync or async) to return true; an error it throws goes to `next(err)`. */
export function requireKey<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  predicate: (key: VerifiedKey, req: Req) => boolean | Promise<boolean>,
  options: RequireKeyOptions = {},
): Guard<Req, Res> {
  return guard<Req, Res>(keyCheck(predicate, options));
}
