// The wire contract of the key service: every operation's request body and answer `data`, as
// TypeBox schemas (JSON Schema) from which both the TypeScript types and the checks come.
import type { TSchema } from "typebox";
import { analyticsOperations } from "./analytics";
import { auditOperations } from "./audit";
import { webhooksOperations } from "./webhooks";
import { apisExtensions, apisOperations } from "./apis";
import { identitiesOperations } from "./identities";
import { keysExtensions, keysOperations } from "./keys";
import { permissionsOperations } from "./permissions";
import { ratelimitExtensions, ratelimitOperations } from "./ratelimit";
import { rootKeysOperations } from "./root-keys";
import { portalExtensions, portalOperations } from "./portal";

/** One operation: the schema of its request body and of its answer's `data`. */
export interface OperationContract {
  readonly request: TSchema;
  readonly response: TSchema;
}

/** The operations of production's v2 API that keyguard implements, by wire name (`group.operation`). */
export const CONTRACT = Object.freeze({
  ...keysOperations,
  ...apisOperations,
  ...permissionsOperations,
  ...identitiesOperations,
  ...ratelimitOperations,
  ...analyticsOperations,
  ...portalOperations,
});

/**
 * keyguard's own operations, served like the others: listing APIs, the settings of APIs and keys,
 * rate-limit namespaces, managing root keys, reading the audit log, webhooks.
 */
export const EXTENSION_CONTRACT = Object.freeze({
  ...apisExtensions,
  ...keysExtensions,
  ...ratelimitExtensions,
  ...rootKeysOperations,
  ...auditOperations,
  ...webhooksOperations,
  ...portalExtensions,
});

export type ContractName = keyof typeof CONTRACT | keyof typeof EXTENSION_CONTRACT;

/** The contract of an operation by wire name, or undefined for a name the service does not serve. */
export function contractOf(name: string): OperationContract | undefined {
  if (Object.hasOwn(CONTRACT, name)) return CONTRACT[name as keyof typeof CONTRACT];
  if (Object.hasOwn(EXTENSION_CONTRACT, name)) return EXTENSION_CONTRACT[name as keyof typeof EXTENSION_CONTRACT];
  return undefined;
}
