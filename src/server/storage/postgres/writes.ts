// How a record is written to its rows (rows.ts gives the layout): as a statement part (query.ts), so
// that a put runs alone in a transaction (tx.ts) or joins the other writes of an optimistic one in
// a single statement (optimistic.ts). Each put replaces the row and its links together.
import type { KeyRecord, RoleRecord, TableName, Tables } from "../../records";
import { LAYOUTS, keyColumns, roleData } from "./rows";
import { and, row, where, type Params, type Part } from "./query";

/**
 * The put of `record` into `table`, its entries named from `n`, writing only `when` that SQL
 * condition holds (query.ts). Its answer: whether it created a key (not one replaced; false for
 * the other tables).
 */
export function putPart<T extends TableName>(
  t: (name: string) => string,
  table: T,
  record: Tables[T],
  p: Params,
  n: string,
  when?: string,
): Part {
  if (table === "keys") return keyPart(t, record as KeyRecord, p, n, when);
  if (table === "roles") return rolePart(t, record as RoleRecord, p, n, when);
  const layout = LAYOUTS[table];
  const fields = Object.keys(layout.columns);
  const columns = ["id", ...fields.map((f) => layout.columns[f]!), "data"];
  const values = [
    p.add(record.id),
    ...fields.map((f) => p.add((record as unknown as Record<string, unknown>)[f])),
    `${p.add(JSON.stringify(record))}::jsonb`,
  ];
  const updates = columns.slice(1).map((c) => `${c} = EXCLUDED.${c}`);
  return {
    ctes: [
      `${n} AS (INSERT INTO ${t(layout.table)} (${columns.join(", ")}) ${row(values, when)}
       ON CONFLICT (id) DO UPDATE SET ${updates.join(", ")})`,
    ],
    answer: "false",
  };
}

function keyPart(t: (name: string) => string, key: KeyRecord, p: Params, n: string, when?: string): Part {
  const c = keyColumns(key);
  const id = p.add(key.id);
  return {
    ctes: [
      `${n}k AS (
         INSERT INTO ${t("keys")} (id, workspace_id, api_id, hash, identity_id, credits_remaining, credits_last_refill_at, credits_refill, data)
         ${row(
           [
             id,
             p.add(key.workspaceId),
             p.add(key.apiId),
             p.add(key.hash),
             p.add(c.identityId),
             p.add(c.remaining),
             p.add(c.lastRefillAt),
             `${p.add(c.refill === null ? null : JSON.stringify(c.refill))}::jsonb`,
             `${p.add(JSON.stringify(c.data))}::jsonb`,
           ],
           when,
         )}
         ON CONFLICT (id) DO UPDATE SET workspace_id = EXCLUDED.workspace_id, api_id = EXCLUDED.api_id, hash = EXCLUDED.hash,
           identity_id = EXCLUDED.identity_id, credits_remaining = EXCLUDED.credits_remaining,
           credits_last_refill_at = EXCLUDED.credits_last_refill_at, credits_refill = EXCLUDED.credits_refill, data = EXCLUDED.data
         RETURNING id, xmax = 0 AS created)`,
      `${n}dp AS (DELETE FROM ${t("key_permissions")} WHERE key_id = ${id}${and(when)})`,
      `${n}dr AS (DELETE FROM ${t("key_roles")} WHERE key_id = ${id}${and(when)})`,
      `${n}ip AS (INSERT INTO ${t("key_permissions")} (key_id, permission_id, position)
              SELECT ${id}, x, o FROM unnest(${p.add(key.permissionIds)}::text[]) WITH ORDINALITY AS u(x, o)${where(when)})`,
      `${n}ir AS (INSERT INTO ${t("key_roles")} (key_id, role_id, position)
              SELECT ${id}, x, o FROM unnest(${p.add(key.roleIds)}::text[]) WITH ORDINALITY AS u(x, o)${where(when)})`,
    ],
    answer: `(SELECT created FROM ${n}k)`,
  };
}

function rolePart(t: (name: string) => string, role: RoleRecord, p: Params, n: string, when?: string): Part {
  const id = p.add(role.id);
  return {
    ctes: [
      `${n}r AS (
         INSERT INTO ${t("roles")} (id, workspace_id, name, data)
         ${row([id, p.add(role.workspaceId), p.add(role.name), `${p.add(JSON.stringify(roleData(role)))}::jsonb`], when)}
         ON CONFLICT (id) DO UPDATE SET workspace_id = EXCLUDED.workspace_id, name = EXCLUDED.name, data = EXCLUDED.data)`,
      `${n}d AS (DELETE FROM ${t("role_permissions")} WHERE role_id = ${id}${and(when)})`,
      `${n}i AS (INSERT INTO ${t("role_permissions")} (role_id, permission_id, position)
             SELECT ${id}, x, o FROM unnest(${p.add(role.permissionIds)}::text[]) WITH ORDINALITY AS u(x, o)${where(when)})`,
    ],
    answer: "false",
  };
}
