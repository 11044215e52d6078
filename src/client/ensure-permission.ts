// permissions.ensure: find a permission by exact name (across pages), create it when missing, and
// survive a concurrent creation (409 already_exists → look it up again). Resolves to its id.

import type { CreatePermissionRequest, CreatePermissionResult, GetPermissionRequest, ListPermissionsRequest, Permission } from "../protocol/types";
import { isKeyServiceError, type KeyServiceHttpError } from "./errors";
import type { CallOptions } from "./options";

export interface EnsurePermissionInput {
  /** Exact name to look for (case sensitive). */
  name: string;
  description?: string;
  /** Slug to create it with. Default: `name` (the production service requires a slug). */
  slug?: string;
}

/** The operations ensure() needs; the client's permissions namespace provides them. */
export interface PermissionOps {
  listAllPermissions(body?: Omit<ListPermissionsRequest, "cursor">, options?: CallOptions): AsyncGenerator<Permission, void, undefined>;
  createPermission(body: CreatePermissionRequest, options?: CallOptions): Promise<CreatePermissionResult>;
  getPermission(body: GetPermissionRequest, options?: CallOptions): Promise<Permission>;
}

/** Each sub-call (list pages, create, lookup) gets `options` and so its own deadline. */
export async function ensurePermission(ops: PermissionOps, input: EnsurePermissionInput, options?: CallOptions): Promise<string> {
  if (typeof input !== "object" || input === null || typeof input.name !== "string" || input.name === "") {
    throw new TypeError("permissions.ensure: `name` must be a non-empty string.");
  }
  const { name, description } = input;
  const slug = input.slug ?? name;
  const found = await findByName(ops, name, options);
  if (found) return found.id;
  try {
    const created = await ops.createPermission({ name, slug, ...(description !== undefined && { description }) }, options);
    return created.permissionId;
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  // Someone created it between our lookup and our create: it exists now, by name or by slug.
  const again = await findByName(ops, name, options);
  if (again) return again.id;
  const bySlug = await ops.getPermission({ permission: slug }, options);
  return bySlug.id;
}

async function findByName(ops: PermissionOps, name: string, options: CallOptions | undefined): Promise<Permission | undefined> {
  // `search` narrows the pages; the exact comparison decides (search may match substrings).
  for await (const permission of ops.listAllPermissions({ search: name }, options)) {
    if (permission.name === name) return permission;
  }
  return undefined;
}

function isAlreadyExists(error: unknown): boolean {
  return isKeyServiceError(error) && (error as KeyServiceHttpError).kind === "data.permission_already_exists";
}
