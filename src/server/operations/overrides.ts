// Operations ratelimit.setOverride, getOverride, listOverrides and deleteOverride: a namespace's
// own limit for an identifier or a `*` pattern of identifiers. The namespace (id or name) must
// exist: these operations never create one, and a missing one is 404 before any permission check.
import type { RatelimitOverride } from "../../protocol/types";
import { onNamespace } from "./authorization";
import { ServiceError } from "../errors";
import { newId } from "../domain/ids";
import { exactOverride, matchingOverride } from "./namespaces";
import { defineOperation } from "./operation";
import { pageOf } from "../domain/pagination";
import type { RatelimitOverrideRecord } from "../records";

/** Production's page size when `limit` is absent. */
const DEFAULT_OVERRIDES_PAGE = 50;

function overrideNotFound(): ServiceError {
  return new ServiceError("data.ratelimit_override_not_found", "This override does not exist.");
}

function overrideView(o: RatelimitOverrideRecord): RatelimitOverride {
  return { overrideId: o.id, duration: o.duration, identifier: o.identifier, limit: o.limit };
}

export const setOverrideOperation = defineOperation("ratelimit.setOverride", {
  access: "write",
  authorize: onNamespace("set_override"),
  audit: (_body, data, ns) => ({ targets: [data.overrideId, ns.id] }),
  async run(ctx, body) {
    const ns = ctx.resource;
    // One override per identifier (or pattern): setting it again keeps its id.
    const existing = await exactOverride(ctx.tx, ns, body.identifier);
    const record: RatelimitOverrideRecord = {
      id: existing?.id ?? newId("rlor"),
      workspaceId: ns.workspaceId,
      namespaceId: ns.id,
      identifier: body.identifier,
      limit: body.limit,
      duration: body.duration,
      createdAt: existing?.createdAt ?? ctx.now,
    };
    await ctx.tx.put("ratelimitOverrides", record);
    return { data: { overrideId: record.id } };
  },
});

export const getOverrideOperation = defineOperation("ratelimit.getOverride", {
  access: "read",
  // As production: a root key that may not read overrides learns nothing, not even that one exists.
  authorize: onNamespace("read_override", overrideNotFound),
  async run(ctx, body) {
    const found = await matchingOverride(ctx.tx, ctx.resource, body.identifier);
    if (!found) throw overrideNotFound();
    return { data: overrideView(found) };
  },
});

export const listOverridesOperation = defineOperation("ratelimit.listOverrides", {
  access: "read",
  authorize: onNamespace("read_override"),
  async run(ctx, body) {
    const ns = ctx.resource;
    const where = { field: "namespaceId" as const, value: ns.id };
    const page = await pageOf(
      (from, limit) => ctx.tx.list("ratelimitOverrides", ns.workspaceId, { from, limit, where }),
      body.cursor,
      body.limit ?? DEFAULT_OVERRIDES_PAGE,
    );
    return { data: page.items.map(overrideView), pagination: page.pagination };
  },
});

export const deleteOverrideOperation = defineOperation("ratelimit.deleteOverride", {
  access: "write",
  authorize: onNamespace("delete_override"),
  audit: (_body, _data, ns) => ({ targets: [ns.id] }),
  async run(ctx, body) {
    const ns = ctx.resource;
    // Exactly as set: a pattern is deleted by the pattern, never through an identifier it matches.
    const found = await exactOverride(ctx.tx, ns, body.identifier);
    if (!found) throw overrideNotFound();
    await ctx.tx.delete("ratelimitOverrides", found.id);
    ctx.changed({ targets: [found.id] });
    return { data: {} };
  },
});
