// The verified key: what an admitted request carries to the app (the service's verification result,
// never the raw key), and its place on Express's request type (`req.apiKey`, set by `apiKeyAuth()`
// and by Nest's `ApiKeyGuard` on the Express platform).

import type { VerifyKeyResult } from "../protocol/types";

/** A key the service accepted: its verification result (keyId, permissions, meta, …). Read-only. */
export type VerifiedKey = Readonly<VerifyKeyResult> & { readonly valid: true };

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by `apiKeyAuth()` when the request's API key was verified; absent otherwise. */
      apiKey?: VerifiedKey;
    }
  }
}
