// Operations ratelimit.limit and ratelimit.multiLimit: sliding-window limits per namespace,
// identifier and window length. A namespace is created on first use (with
// `ratelimit.*.create_namespace`); an override of the namespace replaces the request's limit and
// window for the identifiers it matches.
import type { RatelimitLimitRequest, RatelimitMultiLimitCheck } from "../../protocol/types";
import { requireAnyOrAll, requirePermission, requireTuple } from "./auth";
import { fromStore } from "./authorization";
import { createNamespace, findNamespace, matchingOverride } from "./namespaces";
import { defineOperation, type OpContext } from "./operation";
import { namespaceCounter, type LimitCheck } from "../domain/sliding-window";
import type { RatelimitNamespaceRecord } from "../records";

/**
 * The namespaces of the requests, in order; missing ones are created first, which needs
 * `ratelimit.*.create_namespace` (named alone when missing).
 */
async function namespacesOf(ctx: OpContext, requests: readonly RatelimitLimitRequest[]): Promise<RatelimitNamespaceRecord[]> {
  const { tx, root, now } = ctx;
  const byRef = new Map<string, RatelimitNamespaceRecord | undefined>();
  for (const { namespace } of requests)
    if (!byRef.has(namespace)) byRef.set(namespace, await findNamespace(tx, root.workspaceId, namespace));
  const missing = [...byRef].filter(([, ns]) => ns === undefined).map(([ref]) => ref);
  if (missing.length > 0) requireTuple(root, "ratelimit.*.create_namespace");
  for (const name of missing) {
    const created = await createNamespace(tx, root.workspaceId, name, now);
    byRef.set(name, created);
    ctx.changed({ targets: [created.id], change: { createdNamespace: name } });
  }
  return requests.map((r) => byRef.get(r.namespace)!);
}

/** The check of one request: its override (when one matches) sets the limit and the window. */
async function checkOf(
  ctx: OpContext,
  ns: RatelimitNamespaceRecord,
  request: RatelimitLimitRequest,
): Promise<{ check: LimitCheck; overrideId?: string }> {
  const override = await matchingOverride(ctx.tx, ns, request.identifier);
  const limit = override?.limit ?? request.limit;
  const duration = override?.duration ?? request.duration;
  const check = {
    counter: namespaceCounter(ctx.root.workspaceId, ns.id, request.identifier, duration),
    limit,
    duration,
    cost: request.cost ?? 1,
  };
  return override ? { check, overrideId: override.id } : { check };
}

/** The namespace (created on first use), then `ratelimit.<namespaceId>.limit` or `ratelimit.*.limit`. */
const mayLimit = fromStore(
  "ratelimit.<namespaceId>.limit (and ratelimit.*.create_namespace for a new namespace)",
  async (ctx, body: RatelimitLimitRequest) => {
    const [ns] = await namespacesOf(ctx, [body]);
    requirePermission(ctx.root, [`ratelimit.${ns!.id}.limit`, "ratelimit.*.limit"]);
    return ns!;
  },
);

/** The namespaces (created on first use), then `ratelimit.*.limit`, or else `ratelimit.<namespaceId>.limit` of every one. */
const mayLimitAll = fromStore(
  "ratelimit.*.limit or every ratelimit.<namespaceId>.limit (and ratelimit.*.create_namespace for a new namespace)",
  async (ctx, body: readonly RatelimitLimitRequest[]) => {
    const namespaces = await namespacesOf(ctx, body);
    requireAnyOrAll(ctx.root, "ratelimit.*.limit", [...new Set(namespaces.map((ns) => `ratelimit.${ns.id}.limit`))]);
    return namespaces;
  },
);

export const ratelimitLimitOperation = defineOperation("ratelimit.limit", {
  access: "direct",
  authorize: mayLimit,
  async run(ctx, body) {
    const { check, overrideId } = await checkOf(ctx, ctx.resource, body);
    const { passed, states } = await ctx.tx.limit([check], ctx.now);
    ctx.countLimit(ctx.root.workspaceId, ctx.resource.id, ctx.now, passed);
    const state = states[0]!;
    const data = { limit: check.limit, remaining: state.remaining, reset: state.reset, success: passed };
    return { data: overrideId === undefined ? data : { ...data, overrideId } };
  },
});

export const ratelimitMultiLimitOperation = defineOperation("ratelimit.multiLimit", {
  access: "direct",
  authorize: mayLimitAll,
  async run(ctx, body) {
    const namespaces = ctx.resource;
    const checks: Array<{ check: LimitCheck; overrideId?: string }> = [];
    for (let i = 0; i < body.length; i++) checks.push(await checkOf(ctx, namespaces[i]!, body[i]!));
    // All or nothing: when one limit fails, none is charged.
    const { passed, states } = await ctx.tx.limit(
      checks.map((c) => c.check),
      ctx.now,
    );
    const limits = body.map((request, i): RatelimitMultiLimitCheck => {
      const { check, overrideId } = checks[i]!;
      const state = states[i]!;
      const item: RatelimitMultiLimitCheck = {
        namespace: request.namespace,
        identifier: request.identifier,
        limit: check.limit,
        remaining: state.remaining,
        reset: state.reset,
        passed: state.passed,
      };
      if (overrideId !== undefined) item.overrideId = overrideId;
      return item;
    });
    return { data: { passed, limits } };
  },
});
