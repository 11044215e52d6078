// The permissions.* operations: permissions and roles of a workspace.
import * as Type from "typebox";
import { listFields, RoleName, Slug, strict, text } from "./fields";
import { EmptyData, Permission, Role } from "./resources";

/** `slug` may be left out (the specification's `{ name, description }`): the service derives it from `name`. */
export const CreatePermissionRequest = strict({
  name: text(512),
  slug: Type.Optional(Slug),
  description: Type.Optional(Type.String({ maxLength: 512 })),
});
export const CreatePermissionResult = Type.Object({ permissionId: Type.String() });

/** getPermission and deletePermission: by id or slug. */
export const GetPermissionRequest = strict({ permission: Slug });

export const ListPermissionsRequest = strict({ ...listFields, search: Type.Optional(text(255)) });

export const CreateRoleRequest = strict({
  name: RoleName,
  description: Type.Optional(Type.String({ maxLength: 512 })),
  /** Permission slugs; missing ones are created. */
  permissions: Type.Optional(Type.Array(Slug)),
});
export const CreateRoleResult = Type.Object({ roleId: Type.String() });

/** getRole and deleteRole: by id or name. */
export const GetRoleRequest = strict({ role: RoleName });

export const ListRolesRequest = strict({ ...listFields, search: Type.Optional(text(255)) });

export const SetRolePermissionsRequest = strict({
  /** The role's id. */
  roleId: text(255, { minLength: 3, pattern: "^[a-zA-Z0-9_-]+$", "x-fix": "Use the role's id as returned, e.g. role_…" }),
  /** Slugs: the role's complete new set of direct permissions; missing ones are created. `[]` clears. */
  permissions: Type.Array(Slug),
});

export const permissionsOperations = {
  "permissions.createPermission": { request: CreatePermissionRequest, response: CreatePermissionResult },
  "permissions.getPermission": { request: GetPermissionRequest, response: Permission },
  "permissions.listPermissions": { request: ListPermissionsRequest, response: Type.Array(Permission) },
  "permissions.deletePermission": { request: GetPermissionRequest, response: EmptyData },
  "permissions.createRole": { request: CreateRoleRequest, response: CreateRoleResult },
  "permissions.getRole": { request: GetRoleRequest, response: Role },
  "permissions.listRoles": { request: ListRolesRequest, response: Type.Array(Role) },
  "permissions.deleteRole": { request: GetRoleRequest, response: EmptyData },
  "permissions.setRolePermissions": { request: SetRolePermissionsRequest, response: Type.Array(Permission) },
} as const;
