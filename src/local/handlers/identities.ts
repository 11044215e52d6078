// Operations identities.*: an identity groups keys under the caller's `externalId` and carries
// rate limits shared by all its keys.
import { requirePermission } from "../auth";
import { ServiceError } from "../envelope";
import { newId } from "../ids";
import { requireIdentity, toRatelimitRecords } from "../lookup";
import { defineOperation } from "../operation";
import { matchesSearch, paginate } from "../paginate";
import { dropLimitCounters, dropOwnedCounters } from "../ratelimit";
import * as s from "../schemas";
import { inWorkspace, type IdentityRecord } from "../store";
import { obj, record, str } from "../validate";
import { identityView } from "../views";

export const createIdentityOperation = defineOperation("identities.createIdentity", {
  schema: obj({ externalId: str({ max: 255 }), meta: record(), ratelimits: s.ratelimitList() }, ["externalId"]),
  refine: (body) => s.checkUniqueNames("body.ratelimits", body.ratelimits),
  run(ctx, body) {
    requirePermission(ctx.root, ["identity.*.create_identity"]);
    const ws = ctx.root.workspaceId;
    if (inWorkspace(ctx.store.state.identities, ws).some((i) => i.externalId === body.externalId)) {
      throw new ServiceError("data.identity_already_exists", `An identity with externalId ${JSON.stringify(body.externalId)} already exists.`);
    }
    const identity: IdentityRecord = {
      id: newId("id"),
      workspaceId: ws,
      externalId: body.externalId,
      ratelimits: toRatelimitRecords(body.ratelimits ?? []),
      createdAt: ctx.now,
    };
    if (body.meta !== undefined) identity.meta = body.meta;
    ctx.store.state.identities[identity.id] = identity;
    ctx.store.touch();
    return { data: { identityId: identity.id } };
  },
});

export const getIdentityOperation = defineOperation("identities.getIdentity", {
  schema: obj({ identity: str({ max: 255 }) }, ["identity"]),
  run(ctx, body) {
    requirePermission(ctx.root, ["identity.*.read_identity"]);
    return { data: identityView(requireIdentity(ctx.store, ctx.root.workspaceId, body.identity)) };
  },
});

export const listIdentitiesOperation = defineOperation("identities.listIdentities", {
  schema: obj({ ...s.listFields(), search: str({ max: 255 }) }),
  run(ctx, body) {
    requirePermission(ctx.root, ["identity.*.read_identity"]);
    const all = inWorkspace(ctx.store.state.identities, ctx.root.workspaceId).filter((i) =>
      matchesSearch(body.search, i.id, i.externalId),
    );
    const page = paginate(all, body.cursor, body.limit);
    return { data: page.items.map(identityView), pagination: page.pagination };
  },
});

export const updateIdentityOperation = defineOperation("identities.updateIdentity", {
  schema: obj({ identity: str({ max: 255 }), meta: record(), ratelimits: s.ratelimitList() }, ["identity"]),
  refine: (body) => s.checkUniqueNames("body.ratelimits", body.ratelimits),
  run(ctx, body) {
    requirePermission(ctx.root, ["identity.*.update_identity"]);
    const identity = requireIdentity(ctx.store, ctx.root.workspaceId, body.identity);
    if (body.meta !== undefined) identity.meta = body.meta;
    if (body.ratelimits) {
      const next = toRatelimitRecords(body.ratelimits, identity.ratelimits);
      const dropped = identity.ratelimits.filter((old) => !next.some((r) => r.id === old.id));
      dropLimitCounters(ctx.store.state.windows, dropped.map((r) => r.id));
      identity.ratelimits = next;
    }
    ctx.store.touch();
    return { data: identityView(identity) };
  },
});

export const deleteIdentityOperation = defineOperation("identities.deleteIdentity", {
  schema: obj({ identity: str({ max: 255 }) }, ["identity"]),
  run(ctx, body) {
    requirePermission(ctx.root, ["identity.*.delete_identity"]);
    const identity = requireIdentity(ctx.store, ctx.root.workspaceId, body.identity);
    const { state } = ctx.store;
    for (const k of Object.values(state.keys)) if (k.identityId === identity.id) delete k.identityId;
    dropOwnedCounters(state.windows, identity.id);
    delete state.identities[identity.id];
    ctx.store.touch();
    return { data: {} };
  },
});
