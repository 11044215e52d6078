// Handling the client's errors: narrow by `code` (works across copies of keyguard) and read each
// kind's fields. Type-checked in CI (`tsc --noEmit` covers examples/); not part of the package.

import { createClient, isKeyServiceError, type AnyKeyServiceError } from "keyguard/client";

const unkey = createClient(); // reads UNKEY_ROOT_KEY (required) and UNKEY_BASE_URL

/** A one-line, secret-free description of a failed call, for logs. */
export function describeFailure(e: AnyKeyServiceError): string {
  switch (e.code) {
    case "KEY_SERVICE_HTTP_ERROR":
      return `HTTP ${e.status} ${e.kind ?? e.title}${e.retryAfter === undefined ? "" : `, retry after ${e.retryAfter} ms`}`;
    case "KEY_SERVICE_TIMEOUT":
      return `no answer within the ${e.scope === "deadline" ? "call's deadline" : "per-attempt timeout"} of ${e.timeout} ms`;
    case "KEY_SERVICE_NETWORK_ERROR":
      return `unreachable after ${e.attempts} attempt(s)`;
    case "KEY_SERVICE_INVALID_RESPONSE":
      return `invalid answer (HTTP ${e.status}, request ${e.requestId ?? "unknown"})`;
  }
}

/** Returns the permission's id, or undefined when it does not exist; other failures propagate. */
export async function findPermissionId(slug: string): Promise<string | undefined> {
  try {
    const permission = await unkey.permissions.getPermission({ permission: slug }, { timeout: 1000, retry: false });
    return permission.id;
  } catch (e) {
    if (isKeyServiceError(e) && e.code === "KEY_SERVICE_HTTP_ERROR" && e.kind === "data.permission_not_found") return undefined;
    if (isKeyServiceError(e)) throw new Error(`permissions.getPermission failed: ${describeFailure(e)}`, { cause: e });
    throw e;
  }
}
