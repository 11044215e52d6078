// Operation ratelimit.limit: a standalone sliding-window limit per namespace, identifier and
// window length.
import { requirePermission } from "../auth";
import { defineOperation } from "../operation";
import { checkLimits, namespaceCounter } from "../ratelimit";
import { int, obj, str } from "../validate";

export const ratelimitLimitOperation = defineOperation("ratelimit.limit", {
  schema: obj(
    {
      namespace: str({ max: 255 }),
      identifier: str({ max: 255 }),
      limit: int({ min: 1 }),
      duration: int({ min: 1000 }),
      cost: int({ min: 0 }),
    },
    ["namespace", "identifier", "limit", "duration"],
  ),
  run(ctx, body) {
    requirePermission(ctx.root, ["ratelimit.*.limit", `ratelimit.${body.namespace}.limit`]);
    const counter = namespaceCounter(ctx.root.workspaceId, body.namespace, body.identifier, body.duration);
    const check = { counter, limit: body.limit, duration: body.duration, cost: body.cost ?? 1 };
    const { passed, states } = checkLimits(ctx.store.state.windows, [check], ctx.now);
    if (passed) ctx.store.touch();
    const state = states[0]!;
    return { data: { limit: body.limit, remaining: state.remaining, reset: state.reset, success: passed } };
  },
});
