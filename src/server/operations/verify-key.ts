// Operation keys.verifyKey (its body schema is in the contract); the checks themselves live in ../domain/verification.ts.
import { verifyGrant } from "./authorization";
import { defineOperation } from "./operation";
import { checkUniqueNames } from "../../protocol/contract/cross-field";
import { verifyKey } from "./verification";

export const verifyKeyOperation = defineOperation("keys.verifyKey", {
  access: "direct",
  // 403 for a root key that may verify no API's keys; a key of an API it may not verify is NOT_FOUND, as production masks it.
  authorize: verifyGrant(),
  refine: (body) => checkUniqueNames("body.ratelimits", body.ratelimits),
  run: async (ctx, body) => ({ data: await verifyKey(ctx, body, ctx.resource) }),
});
