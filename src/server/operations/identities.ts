// Operations identities.*: an identity groups keys under the caller's `externalId` and carries
// rate limits shared by all its keys.
import { permission } from "./authorization";
import { ServiceError } from "../errors";
import { newId } from "../domain/ids";
import { requireIdentity, toRatelimitRecords } from "./lookup";
import { defineOperation, targetsNotedByRun } from "./operation";
import { matchesSearch, pageOf } from "../domain/pagination";
import * as s from "../../protocol/contract/cross-field";
import type { IdentityRecord } from "../records";
import { identityView } from "../domain/views";
import { described } from "../domain/caller-value";

export const createIdentityOperation = defineOperation("identities.createIdentity", {
  access: "write",
  authorize: permission("identity.*.create_identity"),
  audit: (_body, data) => ({ targets: [data.identityId] }),
  refine: (body) => s.checkUniqueNames("body.ratelimits", body.ratelimits),
  async run(ctx, body) {
    const ws = ctx.root.workspaceId;
    if ((await ctx.tx.find("identities", ws, "externalId", body.externalId)).length > 0) {
      throw new ServiceError(
        "data.identity_already_exists",
        `An identity with the externalId of ${described("body.externalId", body.externalId)} already exists.`,
      );
    }
    const identity: IdentityRecord = {
      id: newId("id"),
      workspaceId: ws,
      externalId: body.externalId,
      ratelimits: toRatelimitRecords(body.ratelimits ?? []),
      createdAt: ctx.now,
    };
    if (body.meta !== undefined) identity.meta = body.meta;
    await ctx.tx.put("identities", identity);
    return { data: { identityId: identity.id } };
  },
});

export const getIdentityOperation = defineOperation("identities.getIdentity", {
  access: "read",
  authorize: permission("identity.*.read_identity"),
  async run(ctx, body) {
    return { data: identityView(await requireIdentity(ctx.tx, ctx.root.workspaceId, body.identity)) };
  },
});

export const listIdentitiesOperation = defineOperation("identities.listIdentities", {
  access: "read",
  authorize: permission("identity.*.read_identity"),
  async run(ctx, body) {
    const ws = ctx.root.workspaceId;
    const page = await pageOf(
      (from, limit) => ctx.tx.list("identities", ws, { from, limit }),
      body.cursor,
      body.limit,
      body.search ? (i) => matchesSearch(body.search, i.id, i.externalId) : undefined,
    );
    return { data: page.items.map(identityView), pagination: page.pagination };
  },
});

export const updateIdentityOperation = defineOperation("identities.updateIdentity", {
  access: "write",
  authorize: permission("identity.*.update_identity"),
  audit: (_body, data) => ({ targets: [data.id] }),
  refine: (body) => s.checkUniqueNames("body.ratelimits", body.ratelimits),
  async run(ctx, body) {
    const identity = await requireIdentity(ctx.tx, ctx.root.workspaceId, body.identity);
    if (body.meta !== undefined) identity.meta = body.meta;
    if (body.ratelimits) {
      const next = toRatelimitRecords(body.ratelimits, identity.ratelimits);
      const dropped = identity.ratelimits.filter((old) => !next.some((r) => r.id === old.id));
      if (dropped.length > 0) await ctx.tx.dropCounters({ limitIds: dropped.map((r) => r.id) });
      identity.ratelimits = next;
    }
    await ctx.tx.put("identities", identity);
    return { data: identityView(identity) };
  },
});

export const deleteIdentityOperation = defineOperation("identities.deleteIdentity", {
  access: "write",
  authorize: permission("identity.*.delete_identity"),
  audit: targetsNotedByRun,
  async run(ctx, body) {
    const identity = await requireIdentity(ctx.tx, ctx.root.workspaceId, body.identity);
    // Its keys lose the link; its counters go.
    await ctx.tx.delete("identities", identity.id);
    ctx.changed({ targets: [identity.id] });
    return { data: {} };
  },
});
