// The verified key: what an admitted request carries to the app (the service's verification result,
// with `permissions` and `roles` always present; never the raw key), and its place on Express's
// request type (`req.apiKey`, set by `apiKeyAuth()` and by Nest's `ApiKeyGuard` on the Express platform).

import type { VerifyKeyResult } from "../protocol/types";

/**
 * A key the service accepted: its verification result (keyId, permissions, meta, …). Read-only.
 * `permissions` and `roles` are always there: `[]` for a key without any (the wire leaves them out).
 */
export type VerifiedKey = Readonly<Omit<VerifyKeyResult, "permissions" | "roles">> & {
  readonly valid: true;
  /** The key's permissions, direct and through its roles; `[]` when it has none. */
  readonly permissions: string[];
  /** The key's roles; `[]` when it has none. */
  readonly roles: string[];
};

const NONE: string[] = Object.freeze([]) as unknown as string[];

/**
 * The result as the app sees it: `result` itself when it lists both permissions and roles, else a
 * copy (every own property, the non-enumerable `requestId` included) with `[]` for the missing ones.
 */
export function withLists(result: Readonly<VerifyKeyResult>): Readonly<VerifyKeyResult> {
  if (result.permissions !== undefined && result.roles !== undefined) return result;
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(result)) as VerifyKeyResult;
  copy.permissions ??= NONE;
  copy.roles ??= NONE;
  return copy;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by `apiKeyAuth()` when the request's API key was verified; absent otherwise. */
      apiKey?: VerifiedKey;
    }
  }
}
