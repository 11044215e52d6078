// keys.createKey's body: accepts the spec's flat `remaining`/`refill` and sends the production
// service's nested `credits: { remaining, refill }`. Giving both shapes is a TypeError.

import type { CreateKeyFlatCredits, CreateKeyRequest } from "../protocol/types";

/** The body createKey accepts: the wire shape, or the same with flat credit fields. */
export type CreateKeyInput = CreateKeyRequest & CreateKeyFlatCredits;

/** Returns the wire body for `input`, never changing `input`. */
export function toCreateKeyBody(input: CreateKeyInput): CreateKeyRequest {
  if (typeof input !== "object" || input === null) throw new TypeError("keys.createKey: the request body must be an object.");
  const { remaining, refill, ...rest } = input;
  if (remaining === undefined && refill === undefined) return rest;
  if (rest.credits !== undefined) {
    throw new TypeError("keys.createKey: pass either `credits: { remaining, refill }` or the flat `remaining`/`refill`, not both.");
  }
  if (remaining === undefined) {
    throw new TypeError("keys.createKey: `refill` needs `remaining` (the starting credits). Pass both, or use `credits`.");
  }
  return { ...rest, credits: { remaining, ...(refill !== undefined && { refill }) } };
}
