// The verified key on the request: its type, the `Express.Request` augmentation (`req.apiKey`),
// and the accessors. The raw key is never stored here; only the service's verification result.

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

/** The verified key of a request, or undefined when `apiKeyAuth()` verified none. */
export function getApiKey(req: object): VerifiedKey | undefined {
  const value = (req as { apiKey?: unknown }).apiKey;
  return typeof value === "object" && value !== null && (value as VerifiedKey).valid === true ? (value as VerifiedKey) : undefined;
}

/** Stores the verified key on `req.apiKey` and, when the response has them, `res.locals.apiKey`. */
export function setApiKey(req: object, res: object, key: VerifiedKey): void {
  (req as { apiKey?: VerifiedKey }).apiKey = key;
  const locals = (res as { locals?: unknown }).locals;
  if (typeof locals === "object" && locals !== null) (locals as { apiKey?: VerifiedKey }).apiKey = key;
}
