// Operation keys.verifyKey (its body schema is in the contract); the checks themselves live in ../domain/verification.ts.
import { defineOperation } from "./operation";
import { checkUniqueNames } from "../../protocol/contract/cross-field";
import { verifyKey } from "../domain/verification";

export const verifyKeyOperation = defineOperation("keys.verifyKey", {
  access: "direct",
  refine: (body) => checkUniqueNames("body.ratelimits", body.ratelimits),
  run: async (ctx, body) => ({ data: await verifyKey(ctx, body) }),
});
