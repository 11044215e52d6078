// Request-body validation: the body against the operation's schema in the contract
// (src/protocol/contract), then the operation's checks across fields, before the root key is looked up.
import { checkValue } from "../../protocol/contract/check";
import { contractOf } from "../../protocol/contract";
import type { ValidationErrorDetail } from "../../protocol/types";
import type { AnyOperation } from "./table";

/** The problems of `body` as the request of `op` (empty when valid): at most 20 from its contract, then `refine`'s. */
export function validateRequest(op: AnyOperation, body: unknown): ValidationErrorDetail[] {
  const contract = contractOf(op.name);
  if (contract === undefined) throw new Error(`no contract for operation ${op.name}`);
  const errors = checkValue(contract.request, body);
  if (errors.length === 0 && op.refine) errors.push(...op.refine(body as never));
  return errors;
}
