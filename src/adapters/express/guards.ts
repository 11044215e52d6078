// Per-route guards over the key `apiKeyAuth()` already verified, as Express/Connect middleware: the
// core's checks every adapter shares, answered with the responder of that apiKeyAuth().

import type { IncomingMessage, ServerResponse } from "node:http";
import {
  anyPermissionCheck,
  isThenable,
  keyCheck,
  permissionsCheck,
  rolesCheck,
  runGuard,
  type GuardCheck,
  type KeyguardError,
  type NextFunction,
  type RequireKeyOptions,
  type VerifiedKey,
} from "../../middleware";
import { getApiKey } from "./request-key";
import { failOnce, once, responderOf } from "./respond";

/** A guard: Express/Connect middleware. */
export type Guard<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse> = (
  req: Req,
  res: Res,
  next: NextFunction,
) => void;

/** Express/Connect middleware over a framework-neutral check of the core. */
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
