// Operation ratelimit.limit: a standalone sliding-window limit per namespace, identifier and
// window length.
import { requirePermission } from "../auth";
import { defineOperation } from "../operation";
import { namespaceCounter } from "../ratelimit";
import { MAX_LIMIT_DURATION } from "../schemas";
import { int, obj, str } from "../validate";

export const ratelimitLimitOperation = defineOperation("ratelimit.limit", {
  access: "direct",
  schema: obj(
    {
      namespace: str({ max: 512 }),
      identifier: str({ max: 512 }),
      limit: int({ min: 1 }),
      duration: int({ min: 1000, max: MAX_LIMIT_DURATION }),
      cost: int({ min: 0 }),
    },
    ["namespace", "identifier", "limit", "duration"],
  ),
  async run(ctx, body) {
    requirePermission(ctx.root, ["ratelimit.*.limit", `ratelimit.${body.namespace}.limit`]);
    const counter = namespaceCounter(ctx.root.workspaceId, body.namespace, body.identifier, body.duration);
    const check = { counter, limit: body.limit, duration: body.duration, cost: body.cost ?? 1 };
    const { passed, states } = await ctx.tx.limit([check], ctx.now);
    const state = states[0]!;
    return { data: { limit: body.limit, remaining: state.remaining, reset: state.reset, success: passed } };
  },
});
