// Operation keys.verifyKey (its body schema is in the contract); the checks themselves live in ../domain/verification.ts.
import { grantOnApis } from "./authorization";
import { defineOperation } from "./operation";
import { checkUniqueNames } from "../../protocol/contract/cross-field";
import { verifyKey } from "../domain/verification";

export const verifyKeyOperation = defineOperation("keys.verifyKey", {
  access: "direct",
  // Never a 403: a key of an API the root key may not verify is NOT_FOUND, as production masks it.
  authorize: grantOnApis("verify_key"),
  refine: (body) => checkUniqueNames("body.ratelimits", body.ratelimits),
  run: async (ctx, body) => ({ data: await verifyKey(ctx, body, ctx.resource) }),
});
