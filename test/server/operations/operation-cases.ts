// One request per operation of the table, which the bootstrap root key may make, and the records
// they name: shared by the suites that go through every operation (authorisation, audit log).
import { refusedUrl } from "../../support/loopback-ports";
import type { Started } from "../helpers";

/** The records the requests below name, made with the bootstrap root key. */
export interface Fixture {
  apiId: string;
  apiToDelete: string;
  keyId: string;
  key: string;
  keyToDelete: string;
  keyToReroll: string;
  /** Given credits by keys.updateCredits: `key` stays without credits, so verifying it changes nothing, in any order. */
  keyForCredits: string;
  roleId: string;
  namespaceId: string;
  migrationId: string;
  rootKeyToDelete: string;
  rootKeyToUpdate: string;
  endpointToDelete: string;
  /** An endpoint on a closed loopback port (the suites allow private addresses), and a message to it. */
  hookEndpoint: string;
  messageId: string;
  /** A portal over the bootstrap API, allowing every self-service action; one to delete. */
  portalId: string;
  portalToDelete: string;
  /** An exchange code not yet exchanged, and an access token with every scope, of the end user "portal-user". */
  portalCode: string;
  portalToken: string;
  /** Keys of "portal-user": one to reroll, one to disable, one to delete. */
  portalKeyToReroll: string;
  portalKeyToToggle: string;
  portalKeyToDelete: string;
}

/** What a root key without any permission gets: an error envelope, or a 200 that reveals nothing. */
type Refusal = { status: 401 | 403 | 404; kind: string; detail: string } | { status: 200; data: unknown };

interface Case {
  body(f: Fixture): unknown;
  refused(f: Fixture): Refusal;
  /**
   * The portal's session operations: made by the session (this access token, or `null` for
   * portal.exchangeCode, whose code is in the body), not the bootstrap root key; the audit log's actor is the session.
   */
  session?(f: Fixture): string | null;
  /** What the refused call sends instead of `body` (portal.exchangeCode: a code that is none, so the real one is left). */
  refusedBody?(f: Fixture): unknown;
}

/** What a root key gets from a portal session's own operation. */
const notASession = (): Refusal => ({
  status: 403,
  kind: "authorization.forbidden",
  detail: "This endpoint is only accessible with a portal session.",
});

const forbidden = (detail: string): Refusal => ({ status: 403, kind: "authorization.insufficient_permissions", detail });
const missingOne = (...tuples: string[]): Refusal => forbidden(`Missing one of these permissions: ${tuples.join(" or ")}`);
const onApi = (action: string, apiId: string) => missingOne(`api.*.${action}`, `api.${apiId}.${action}`);
const onNamespace = (action: string, nsId: string) => missingOne(`ratelimit.${nsId}.${action}`, `ratelimit.*.${action}`);

/** One request per operation, which the bootstrap root key may make (in this order: each changes only its own records). */
export const CASES: Record<string, Case> = {
  "keys.verifyKey": { body: (f) => ({ key: f.key }), refused: () => missingOne("api.*.verify_key", "api.<apiId>.verify_key") },
  "keys.createKey": {
    body: (f) => ({ apiId: f.apiId }),
    refused: () => ({ status: 404, kind: "data.api_not_found", detail: "The specified API was not found." }),
  },
  "keys.getKey": { body: (f) => ({ keyId: f.keyId }), refused: (f) => onApi("read_key", f.apiId) },
  "keys.whoami": {
    body: (f) => ({ key: f.key }),
    refused: () => ({ status: 404, kind: "data.key_not_found", detail: "The specified key was not found." }),
  },
  "keys.updateKey": { body: (f) => ({ keyId: f.keyId, name: "renamed" }), refused: (f) => onApi("update_key", f.apiId) },
  "keys.deleteKey": { body: (f) => ({ keyId: f.keyToDelete }), refused: (f) => onApi("delete_key", f.apiId) },
  "keys.updateCredits": {
    body: (f) => ({ keyId: f.keyForCredits, operation: "set", value: 5 }),
    refused: (f) => onApi("update_key", f.apiId),
  },
  "keys.addPermissions": {
    body: (f) => ({ keyId: f.keyId, permissions: ["perm.one"] }),
    refused: () => missingOne("rbac.*.add_permission_to_key"),
  },
  "keys.removePermissions": {
    body: (f) => ({ keyId: f.keyId, permissions: ["perm.one"] }),
    refused: () => missingOne("rbac.*.remove_permission_from_key"),
  },
  "keys.setPermissions": {
    body: (f) => ({ keyId: f.keyId, permissions: ["perm.one"] }),
    refused: () => missingOne("rbac.*.add_permission_to_key"),
  },
  "keys.addRoles": { body: (f) => ({ keyId: f.keyId, roles: ["role.one"] }), refused: () => missingOne("rbac.*.add_role_to_key") },
  "keys.removeRoles": { body: (f) => ({ keyId: f.keyId, roles: ["role.one"] }), refused: () => missingOne("rbac.*.remove_role_from_key") },
  "keys.setRoles": { body: (f) => ({ keyId: f.keyId, roles: ["role.one"] }), refused: () => missingOne("rbac.*.add_role_to_key") },
  "keys.rerollKey": { body: (f) => ({ keyId: f.keyToReroll, expiration: 0 }), refused: (f) => onApi("create_key", f.apiId) },
  "keys.migrateKeys": {
    body: (f) => ({ migrationId: f.migrationId, apiId: f.apiId, keys: [{ hash: "an-imported-hash" }] }),
    refused: () => onApi("create_key", "<apiId>"),
  },
  "apis.createApi": { body: () => ({ name: "another api" }), refused: () => missingOne("api.*.create_api") },
  "apis.getApi": { body: (f) => ({ apiId: f.apiId }), refused: () => onApi("read_api", "<apiId>") },
  "apis.listKeys": {
    body: (f) => ({ apiId: f.apiId }),
    refused: (f) => ({
      status: 404,
      kind: "data.api_not_found",
      detail: `The requested API, body.apiId (a string of ${f.apiId.length} characters), does not exist or has been deleted.`,
    }),
  },
  "apis.deleteApi": { body: (f) => ({ apiId: f.apiToDelete }), refused: () => onApi("delete_api", "<apiId>") },
  "permissions.createPermission": {
    body: () => ({ name: "two", slug: "perm.two" }),
    refused: () => missingOne("rbac.*.create_permission"),
  },
  "permissions.getPermission": { body: () => ({ permission: "perm.one" }), refused: () => missingOne("rbac.*.read_permission") },
  "permissions.listPermissions": { body: () => ({}), refused: () => missingOne("rbac.*.read_permission") },
  "permissions.deletePermission": { body: () => ({ permission: "perm.del" }), refused: () => missingOne("rbac.*.delete_permission") },
  "permissions.createRole": { body: () => ({ name: "role.two" }), refused: () => missingOne("rbac.*.create_role") },
  "permissions.getRole": { body: () => ({ role: "role.one" }), refused: () => missingOne("rbac.*.read_role") },
  "permissions.listRoles": { body: () => ({}), refused: () => missingOne("rbac.*.read_role") },
  "permissions.deleteRole": { body: () => ({ role: "role.del" }), refused: () => missingOne("rbac.*.delete_role") },
  "permissions.setRolePermissions": {
    body: (f) => ({ roleId: f.roleId, permissions: ["perm.one"] }),
    refused: () => forbidden("Missing permission: 'rbac.*.add_permission_to_role'"),
  },
  "identities.createIdentity": { body: () => ({ externalId: "ext-2" }), refused: () => missingOne("identity.*.create_identity") },
  "identities.getIdentity": { body: () => ({ identity: "ext-1" }), refused: () => missingOne("identity.*.read_identity") },
  "identities.listIdentities": { body: () => ({}), refused: () => missingOne("identity.*.read_identity") },
  "identities.updateIdentity": {
    body: () => ({ identity: "ext-1", meta: { plan: "pro" } }),
    refused: () => missingOne("identity.*.update_identity"),
  },
  "identities.deleteIdentity": { body: () => ({ identity: "ext-del" }), refused: () => missingOne("identity.*.delete_identity") },
  // A limit of 1: the bootstrap root key's request passing afterwards shows the refused one charged nothing.
  "ratelimit.limit": {
    body: () => ({ namespace: "ns.one", identifier: "limit", limit: 1, duration: 60_000 }),
    refused: (f) => missingOne(`ratelimit.${f.namespaceId}.limit`, "ratelimit.*.limit"),
  },
  "ratelimit.multiLimit": {
    body: () => [{ namespace: "ns.one", identifier: "multi", limit: 1, duration: 60_000 }],
    refused: (f) => missingOne("ratelimit.*.limit", `ratelimit.${f.namespaceId}.limit`),
  },
  "ratelimit.setOverride": {
    body: () => ({ namespace: "ns.one", identifier: "u", limit: 5, duration: 60_000 }),
    refused: (f) => onNamespace("set_override", f.namespaceId),
  },
  "ratelimit.getOverride": {
    body: () => ({ namespace: "ns.one", identifier: "u" }),
    refused: () => ({ status: 404, kind: "data.ratelimit_override_not_found", detail: "This override does not exist." }),
  },
  "ratelimit.listOverrides": { body: () => ({ namespace: "ns.one" }), refused: (f) => onNamespace("read_override", f.namespaceId) },
  "ratelimit.deleteOverride": {
    body: () => ({ namespace: "ns.one", identifier: "del" }),
    refused: (f) => onNamespace("delete_override", f.namespaceId),
  },
  "analytics.getVerifications": {
    body: () => ({ query: "SELECT count(*) AS n FROM key_verifications_v1" }),
    refused: () => missingOne("api.*.read_analytics"),
  },
  "apis.listApis": { body: () => ({}), refused: () => ({ status: 200, data: [] }) },
  "apis.getApiSettings": { body: (f) => ({ apiId: f.apiId }), refused: () => onApi("read_api", "<apiId>") },
  "keys.getKeySettings": { body: (f) => ({ keyIds: [f.keyId] }), refused: (f) => onApi("read_key", f.apiId) },
  "apis.updateApi": { body: (f) => ({ apiId: f.apiId, leakResponse: "disable" }), refused: () => onApi("update_api", "<apiId>") },
  "ratelimit.listNamespaces": { body: () => ({}), refused: () => ({ status: 200, data: [] }) },
  "ratelimit.getNamespaceUsage": {
    body: () => ({ namespace: "ns.one", start: 0, end: 3_600_000 }),
    refused: (f) => onNamespace("read_override", f.namespaceId),
  },
  "rootKeys.createRootKey": { body: () => ({ permissions: ["api.*.read_api"] }), refused: () => missingOne("workspace.*.create_root_key") },
  "rootKeys.listRootKeys": { body: () => ({}), refused: () => missingOne("workspace.*.read_root_key") },
  "rootKeys.updateRootKey": {
    body: (f) => ({ keyId: f.rootKeyToUpdate, ipWhitelist: ["10.0.0.0/8"] }),
    refused: () => missingOne("workspace.*.update_root_key"),
  },
  "rootKeys.deleteRootKey": { body: (f) => ({ keyId: f.rootKeyToDelete }), refused: () => missingOne("workspace.*.delete_root_key") },
  "audit.listEvents": { body: (f) => ({ targetId: f.keyId }), refused: () => missingOne("workspace.*.read_audit_log") },
  "webhooks.createEndpoint": {
    body: () => ({ url: "https://hooks.example.com/keyguard", events: ["key.created"] }),
    refused: () => missingOne("workspace.*.create_webhook"),
  },
  "webhooks.listEndpoints": { body: () => ({}), refused: () => missingOne("workspace.*.read_webhook") },
  "webhooks.deleteEndpoint": { body: (f) => ({ endpointId: f.endpointToDelete }), refused: () => missingOne("workspace.*.delete_webhook") },
  "webhooks.listDeliveries": { body: () => ({}), refused: () => missingOne("workspace.*.read_webhook") },
  "webhooks.enableEndpoint": { body: (f) => ({ endpointId: f.hookEndpoint }), refused: () => missingOne("workspace.*.update_webhook") },
  "webhooks.resendDelivery": { body: (f) => ({ messageId: f.messageId }), refused: () => missingOne("workspace.*.update_webhook") },
  "webhooks.updateEndpoint": {
    body: (f) => ({ endpointId: f.hookEndpoint, events: ["root_key.created", "key.created"] }),
    refused: () => missingOne("workspace.*.update_webhook"),
  },
  "webhooks.pauseEndpoint": { body: (f) => ({ endpointId: f.hookEndpoint }), refused: () => missingOne("workspace.*.update_webhook") },
  "webhooks.resumeEndpoint": { body: (f) => ({ endpointId: f.hookEndpoint }), refused: () => missingOne("workspace.*.update_webhook") },
  "webhooks.rotateSecret": { body: (f) => ({ endpointId: f.hookEndpoint }), refused: () => missingOne("workspace.*.update_webhook") },
  "webhooks.listEventTypes": { body: () => ({}), refused: () => missingOne("workspace.*.read_webhook") },
  "webhooks.getDelivery": { body: (f) => ({ messageId: f.messageId }), refused: () => missingOne("workspace.*.read_webhook") },
  "webhooks.resendFailed": {
    body: (f) => ({ endpointId: f.hookEndpoint, since: 0 }),
    refused: () => missingOne("workspace.*.update_webhook"),
  },
  "webhooks.sendTestEvent": { body: (f) => ({ endpointId: f.hookEndpoint }), refused: () => missingOne("workspace.*.update_webhook") },
  "portal.createPortal": { body: (f) => ({ name: "made", apiIds: [f.apiId] }), refused: () => missingOne("portal.*.create_portal") },
  "portal.getPortal": { body: (f) => ({ portalId: f.portalId }), refused: () => missingOne("portal.*.read_portal") },
  "portal.listPortals": { body: () => ({}), refused: () => missingOne("portal.*.read_portal") },
  "portal.updatePortal": { body: (f) => ({ portalId: f.portalId, docs: "# Docs" }), refused: () => missingOne("portal.*.update_portal") },
  "portal.deletePortal": { body: (f) => ({ portalId: f.portalToDelete }), refused: () => missingOne("portal.*.delete_portal") },
  "portal.createSession": {
    body: (f) => ({ portal: f.portalId, externalId: "portal-user", scopes: ["keys:read"] }),
    refused: () => ({ status: 404, kind: "data.portal_not_found", detail: "Portal not found." }),
  },
  "portal.exchangeCode": {
    body: (f) => ({ code: f.portalCode }),
    session: () => null,
    refusedBody: () => ({ code: "pst_none_secret" }),
    refused: () => ({
      status: 401,
      kind: "authentication.portal_session_not_found",
      detail: "The portal session is invalid or has expired.",
    }),
  },
  "portal.listKeys": { body: () => ({}), session: (f) => f.portalToken, refused: notASession },
  "portal.rerollKey": {
    body: (f) => ({ keyId: f.portalKeyToReroll, expiration: 60_000 }),
    session: (f) => f.portalToken,
    refused: notASession,
  },
  "portal.getVerifications": {
    body: () => ({ startTime: Date.now() - 3_600_000, endTime: Date.now() }),
    session: (f) => f.portalToken,
    refused: notASession,
  },
  "portal.getSession": { body: () => ({}), session: (f) => f.portalToken, refused: notASession },
  "portal.createKey": { body: () => ({ name: "made in the portal" }), session: (f) => f.portalToken, refused: notASession },
  "portal.setKeyEnabled": {
    body: (f) => ({ keyId: f.portalKeyToToggle, enabled: false }),
    session: (f) => f.portalToken,
    refused: notASession,
  },
  "portal.deleteKey": { body: (f) => ({ keyId: f.portalKeyToDelete }), session: (f) => f.portalToken, refused: notASession },
};

/** Makes the records the cases name, with the bootstrap root key. */
export async function makeFixture(s: Started): Promise<Fixture> {
  const ok = async (op: string, body: unknown) => {
    const res = await s.call(op, body);
    if (res.status !== 200) throw new Error(`${op}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data;
  };
  const main = await s.createKey();
  const { apiId: apiToDelete } = await ok("apis.createApi", { name: "to delete" });
  for (const slug of ["perm.one", "perm.del"]) await ok("permissions.createPermission", { name: slug, slug });
  const { roleId } = await ok("permissions.createRole", { name: "role.one" });
  await ok("permissions.createRole", { name: "role.del" });
  for (const externalId of ["ext-1", "ext-del"]) await ok("identities.createIdentity", { externalId });
  await ok("ratelimit.limit", { namespace: "ns.one", identifier: "setup", limit: 10, duration: 60_000 });
  for (const identifier of ["u", "del"]) await ok("ratelimit.setOverride", { namespace: "ns.one", identifier, limit: 5, duration: 60_000 });
  const namespaceId = Object.values((await s.service.exportState()).ratelimitNamespaces).find((ns) => ns.name === "ns.one")!.id;
  const { keyId: rootKeyToDelete } = await ok("rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
  const { keyId: rootKeyToUpdate } = await ok("rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
  const { endpointId: endpointToDelete } = await ok("webhooks.createEndpoint", {
    url: "https://hooks.example.net/x",
    events: ["key.leaked"],
  });
  const { endpointId: hookEndpoint } = await ok("webhooks.createEndpoint", {
    url: await refusedUrl("/hook"),
    events: ["root_key.created"],
  });
  await ok("rootKeys.createRootKey", { permissions: ["api.*.read_api"] });
  const [message] = await ok("webhooks.listDeliveries", { endpointId: hookEndpoint });
  const { portalId } = await ok("portal.createPortal", {
    name: "cases",
    apiIds: [s.apiId],
    actions: { create: true, disable: true, delete: true },
  });
  const { portalId: portalToDelete } = await ok("portal.createPortal", { name: "to delete", apiIds: [s.apiId] });
  const scopes = ["keys:read", "keys:create", "keys:reroll", "analytics:read"];
  const codeOf = async () =>
    new URL((await ok("portal.createSession", { portal: portalId, externalId: "portal-user", scopes })).url).searchParams.get("code")!;
  const { accessToken: portalToken } = await ok("portal.exchangeCode", { code: await codeOf() });
  const portalKey = async () => (await s.createKey({ externalId: "portal-user" })).keyId;
  return {
    apiId: s.apiId,
    apiToDelete,
    keyId: main.keyId,
    key: main.key,
    keyToDelete: (await s.createKey()).keyId,
    keyToReroll: (await s.createKey()).keyId,
    keyForCredits: (await s.createKey()).keyId,
    roleId,
    namespaceId,
    migrationId: (await s.service.createKeyMigration()).migrationId,
    rootKeyToDelete,
    rootKeyToUpdate,
    endpointToDelete,
    hookEndpoint,
    messageId: message.messageId,
    portalId,
    portalToDelete,
    portalCode: await codeOf(),
    portalToken,
    portalKeyToReroll: await portalKey(),
    portalKeyToToggle: await portalKey(),
    portalKeyToDelete: await portalKey(),
  };
}
