// The root-key permission tuples the service checks, grouped for the root-key form. A test holds
// this list equal to the service's ALL_ROOT_PERMISSIONS.
export const PERMISSION_GROUPS: ReadonlyArray<readonly [string, readonly string[]]> = [
  [
    "APIs and keys",
    [
      "api.*.create_api",
      "api.*.read_api",
      "api.*.update_api",
      "api.*.delete_api",
      "api.*.create_key",
      "api.*.read_key",
      "api.*.update_key",
      "api.*.delete_key",
      "api.*.verify_key",
      "api.*.encrypt_key",
      "api.*.decrypt_key",
    ],
  ],
  [
    "Permissions and roles",
    [
      "rbac.*.create_permission",
      "rbac.*.read_permission",
      "rbac.*.delete_permission",
      "rbac.*.create_role",
      "rbac.*.read_role",
      "rbac.*.delete_role",
      "rbac.*.add_permission_to_role",
      "rbac.*.remove_permission_from_role",
      "rbac.*.add_permission_to_key",
      "rbac.*.remove_permission_from_key",
      "rbac.*.add_role_to_key",
      "rbac.*.remove_role_from_key",
    ],
  ],
  ["Identities", ["identity.*.create_identity", "identity.*.read_identity", "identity.*.update_identity", "identity.*.delete_identity"]],
  [
    "Rate limits",
    [
      "ratelimit.*.limit",
      "ratelimit.*.create_namespace",
      "ratelimit.*.set_override",
      "ratelimit.*.read_override",
      "ratelimit.*.delete_override",
    ],
  ],
  ["Analytics", ["api.*.read_analytics"]],
  ["Root keys", ["workspace.*.create_root_key", "workspace.*.read_root_key", "workspace.*.delete_root_key"]],
  ["Audit log", ["workspace.*.read_audit_log"]],
  ["Webhooks", ["workspace.*.create_webhook", "workspace.*.read_webhook", "workspace.*.update_webhook", "workspace.*.delete_webhook"]],
];
