// Operation keys.verifyKey: body schema; the checks themselves live in ../verify.ts.
import { MAX_PERMISSION_QUERY_LENGTH } from "../../protocol/permission-query";
import { grantOnApis } from "./authorization";
import { defineOperation } from "./operation";
import { checkUniqueNames } from "./schemas";
import { arr, int, obj, str } from "./validate";
import { verifyKey } from "../domain/verification";

export const verifyKeyOperation = defineOperation("keys.verifyKey", {
  access: "direct",
  // Never a 403: a key of an API the root key may not verify is NOT_FOUND, as production masks it.
  authorize: grantOnApis("verify_key"),
  schema: obj(
    {
      key: str({ max: 512 }),
      permissions: str({ max: MAX_PERMISSION_QUERY_LENGTH }),
      credits: obj({ cost: int({ min: 0, max: 1e12 }) }, ["cost"]),
      ratelimits: arr(
        obj(
          { name: str({ min: 3, max: 255 }), cost: int({ min: 0 }), limit: int({ min: 1 }), duration: int({ min: 1000 }) },
          ["name"],
        ),
        { max: 50 },
      ),
      tags: arr(str({ max: 512 }), { max: 20 }),
      migrationId: str({ min: 0, max: 256 }),
    },
    ["key"],
  ),
  refine: (body) => checkUniqueNames("body.ratelimits", body.ratelimits),
  run: async (ctx, body) => ({ data: await verifyKey(ctx, body, ctx.resource) }),
});
