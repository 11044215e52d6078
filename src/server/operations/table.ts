// The operation table of the local service: every entry of the protocol's `Operations`, by wire
// name (`group.operation`), and keyguard's own. Each definition says, in one place, its name, its
// access to the store, its authorisation and its handler.
import { getVerificationsOperation } from "./analytics";
import * as apis from "./apis";
import { listAuditEventsOperation } from "./audit";
import * as webhooks from "./webhooks";
import * as createKey from "./create-key";
import * as identities from "./identities";
import * as access from "./key-access";
import * as keys from "./keys";
import * as permissions from "./permissions";
import * as overrides from "./overrides";
import { migrateKeysOperation } from "./migrate-keys";
import { listNamespacesOperation } from "./list-namespaces";
import { getNamespaceUsageOperation } from "./namespace-usage";
import { ratelimitLimitOperation, ratelimitMultiLimitOperation } from "./ratelimit";
import { verifyKeyOperation } from "./verify-key";
import * as workspace from "./workspace";
import * as portal from "./portal";
import type { OperationDef, OperationTable } from "./operation";

const OPERATIONS: Readonly<OperationTable> = Object.freeze({
  "keys.verifyKey": verifyKeyOperation,
  "keys.createKey": createKey.createKeyOperation,
  "keys.getKey": keys.getKeyOperation,
  "keys.whoami": keys.whoamiOperation,
  "keys.updateKey": keys.updateKeyOperation,
  "keys.deleteKey": keys.deleteKeyOperation,
  "keys.updateCredits": keys.updateCreditsOperation,
  "keys.addPermissions": access.addPermissionsOperation,
  "keys.removePermissions": access.removePermissionsOperation,
  "keys.setPermissions": access.setPermissionsOperation,
  "keys.addRoles": access.addRolesOperation,
  "keys.removeRoles": access.removeRolesOperation,
  "keys.setRoles": access.setRolesOperation,
  "keys.rerollKey": createKey.rerollKeyOperation,
  "keys.migrateKeys": migrateKeysOperation,
  "apis.createApi": apis.createApiOperation,
  "apis.getApi": apis.getApiOperation,
  "apis.listKeys": apis.listKeysOperation,
  "apis.deleteApi": apis.deleteApiOperation,
  "permissions.createPermission": permissions.createPermissionOperation,
  "permissions.getPermission": permissions.getPermissionOperation,
  "permissions.listPermissions": permissions.listPermissionsOperation,
  "permissions.deletePermission": permissions.deletePermissionOperation,
  "permissions.createRole": permissions.createRoleOperation,
  "permissions.getRole": permissions.getRoleOperation,
  "permissions.listRoles": permissions.listRolesOperation,
  "permissions.deleteRole": permissions.deleteRoleOperation,
  "permissions.setRolePermissions": permissions.setRolePermissionsOperation,
  "identities.createIdentity": identities.createIdentityOperation,
  "identities.getIdentity": identities.getIdentityOperation,
  "identities.listIdentities": identities.listIdentitiesOperation,
  "identities.updateIdentity": identities.updateIdentityOperation,
  "identities.deleteIdentity": identities.deleteIdentityOperation,
  "ratelimit.limit": ratelimitLimitOperation,
  "ratelimit.multiLimit": ratelimitMultiLimitOperation,
  "ratelimit.setOverride": overrides.setOverrideOperation,
  "ratelimit.getOverride": overrides.getOverrideOperation,
  "ratelimit.listOverrides": overrides.listOverridesOperation,
  "ratelimit.deleteOverride": overrides.deleteOverrideOperation,
  "analytics.getVerifications": getVerificationsOperation,
  "portal.createSession": portal.createSessionOperation,
  "portal.exchangeCode": portal.exchangeCodeOperation,
  "portal.listKeys": portal.listKeysOperation,
  "portal.rerollKey": portal.rerollKeyOperation,
  "portal.getVerifications": portal.getVerificationsOperation,
});

/**
 * keyguard's own operations, served like the others: what production does only in its dashboard
 * (listing APIs, managing root keys), the settings of APIs and keys production's answers have no room
 * for, and reading the audit log, so that the console needs no private way in.
 */
const EXTENSION_OPERATIONS = Object.freeze({
  "apis.listApis": workspace.listApisOperation,
  "apis.getApiSettings": apis.getApiSettingsOperation,
  "apis.updateApi": apis.updateApiOperation,
  "keys.getKeySettings": keys.getKeySettingsOperation,
  "ratelimit.listNamespaces": listNamespacesOperation,
  "ratelimit.getNamespaceUsage": getNamespaceUsageOperation,
  "rootKeys.createRootKey": workspace.createRootKeyOperation,
  "rootKeys.listRootKeys": workspace.listRootKeysOperation,
  "rootKeys.updateRootKey": workspace.updateRootKeyOperation,
  "rootKeys.deleteRootKey": workspace.deleteRootKeyOperation,
  "audit.listEvents": listAuditEventsOperation,
  "webhooks.createEndpoint": webhooks.createEndpointOperation,
  "webhooks.listEndpoints": webhooks.listEndpointsOperation,
  "webhooks.deleteEndpoint": webhooks.deleteEndpointOperation,
  "webhooks.listDeliveries": webhooks.listDeliveriesOperation,
  "webhooks.enableEndpoint": webhooks.enableEndpointOperation,
  "webhooks.resendDelivery": webhooks.resendDeliveryOperation,
  "webhooks.updateEndpoint": webhooks.updateEndpointOperation,
  "webhooks.pauseEndpoint": webhooks.pauseEndpointOperation,
  "webhooks.resumeEndpoint": webhooks.resumeEndpointOperation,
  "webhooks.rotateSecret": webhooks.rotateSecretOperation,
  "webhooks.listEventTypes": webhooks.listEventTypesOperation,
  "webhooks.getDelivery": webhooks.getDeliveryOperation,
  "webhooks.resendFailed": webhooks.resendFailedOperation,
  "webhooks.sendTestEvent": webhooks.sendTestEventOperation,
  "portal.createPortal": portal.createPortalOperation,
  "portal.getPortal": portal.getPortalOperation,
  "portal.listPortals": portal.listPortalsOperation,
  "portal.updatePortal": portal.updatePortalOperation,
  "portal.deletePortal": portal.deletePortalOperation,
  "portal.getSession": portal.getSessionOperation,
  "portal.createKey": portal.createKeyOperation,
  "portal.setKeyEnabled": portal.setKeyEnabledOperation,
  "portal.deleteKey": portal.deleteKeyOperation,
});

/** Any operation of the table; its body is validated against the contract before `authorize` and `run` see it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyOperation = OperationDef<string, any, unknown>;

/** Every operation the service serves, production's and keyguard's own. */
export const ALL_OPERATIONS: readonly AnyOperation[] = Object.freeze([
  ...Object.values(OPERATIONS),
  ...Object.values(EXTENSION_OPERATIONS),
]);

export function findOperation(name: string): AnyOperation | undefined {
  if (Object.hasOwn(OPERATIONS, name)) return OPERATIONS[name as keyof OperationTable];
  if (Object.hasOwn(EXTENSION_OPERATIONS, name)) return EXTENSION_OPERATIONS[name as keyof typeof EXTENSION_OPERATIONS];
  return undefined;
}
