// permissions.ensure: find a permission by exact name (across pages), create it when missing, and
// survive a concurrent creation (409 already_exists → look it up again). Resolves to its id; never
// to a permission of another name (a slug taken by one is an error saying so).

import type {
  CreatePermissionRequest,
  CreatePermissionResult,
  GetPermissionRequest,
  ListPermissionsRequest,
  Permission,
} from "../protocol/types";
import { KeyServiceHttpError, isKeyServiceError } from "./errors";
import type { CallOptions } from "./options";

export interface EnsurePermissionInput {
  /** Exact name to look for (case sensitive). */
  name: string;
  description?: string;
  /** Slug to create it with. Default: `name` (the production service requires a slug). */
  slug?: string;
}

/** The operations ensure() needs; the client's permissions namespace provides them. */
interface PermissionOps {
  listAllPermissions(body?: Omit<ListPermissionsRequest, "cursor">, options?: CallOptions): AsyncGenerator<Permission, void, undefined>;
  createPermission(body: CreatePermissionRequest, options?: CallOptions): Promise<CreatePermissionResult>;
  getPermission(body: GetPermissionRequest, options?: CallOptions): Promise<Permission>;
}

/**
 * Each sub-call (list pages, create, lookups) gets `options` and so its own deadline; bound the
 * whole with `options.signal`. After a 409 whose slug is held by a permission named otherwise,
 * rejects with a KeyServiceHttpError (status 409, that 409's `kind`) naming both.
 */
export async function ensurePermission(ops: PermissionOps, input: EnsurePermissionInput, options?: CallOptions): Promise<string> {
  if (typeof input !== "object" || input === null || typeof input.name !== "string" || input.name === "") {
    throw new TypeError("permissions.ensure: `name` must be a non-empty string.");
  }
  const { name, description } = input;
  const slug = input.slug ?? name;
  const found = await findByName(ops, name, options);
  if (found) return found.id;
  let conflict: KeyServiceHttpError;
  try {
    const created = await ops.createPermission({ name, slug, ...(description !== undefined && { description }) }, options);
    return created.permissionId;
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    conflict = error;
  }
  // Someone created it between our lookup and our create: it exists now, by name or by slug.
  const again = await findByName(ops, name, options);
  if (again) return again.id;
  const bySlug = await ops.getPermission({ permission: slug }, options);
  if (bySlug.name === name) return bySlug.id;
  // The slug belongs to a permission of another name: returning it would grant the wrong thing.
  throw new KeyServiceHttpError(
    `permissions.ensure: cannot create ${JSON.stringify(name)}: its slug ${JSON.stringify(slug)} is already used by permission ${bySlug.id} named ${JSON.stringify(bySlug.name)}. Pass another \`slug\`, or ensure ${JSON.stringify(bySlug.name)} instead.`,
    {
      operation: "permissions.createPermission",
      attempts: conflict.attempts,
      status: conflict.status,
      title: conflict.title,
      detail: conflict.detail,
      type: conflict.type,
      ...(conflict.requestId !== undefined && { requestId: conflict.requestId }),
      ...(conflict.identifier !== undefined && { identifier: conflict.identifier, kind: conflict.kind }),
    },
  );
}

async function findByName(ops: PermissionOps, name: string, options: CallOptions | undefined): Promise<Permission | undefined> {
  // `search` narrows the pages; the exact comparison decides (search may match substrings).
  for await (const permission of ops.listAllPermissions({ search: name }, options)) {
    if (permission.name === name) return permission;
  }
  return undefined;
}

function isAlreadyExists(error: unknown): error is KeyServiceHttpError {
  return isKeyServiceError(error) && error.code === "KEY_SERVICE_HTTP_ERROR" && error.kind === "data.permission_already_exists";
}
