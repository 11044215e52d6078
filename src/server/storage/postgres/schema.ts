// The PostgreSQL schema of the key service, as versioned migrations shipped in the code, and the
// start-up step that applies the missing ones under an advisory lock (instances starting
// together wait for each other instead of racing).
import type { PoolClient } from "pg";

/** One migration: applied once, in order, in its own transaction. Never edit a shipped one; add the next. */
interface Migration {
  version: number;
  name: string;
  /** SQL, with `$S` standing for the quoted schema name. */
  sql: string;
}

// Ids compare by code unit (COLLATE "C"), as the seam orders lists. Columns hold what is looked
// up, joined or updated atomically; `data` (JSONB) holds the rest of a record. Every lookup by an
// indexed field has an index (workspace, field, id) that also gives the order, so no plan
// depends on the table's statistics being fresh. Link tables carry
// a key's or role's permissions and roles in order, and make cascading deletes one statement.
const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "tables and indexes",
    sql: `
CREATE TABLE $S.meta (name text COLLATE "C" PRIMARY KEY, value text NOT NULL);
CREATE TABLE $S.workspaces (id text COLLATE "C" PRIMARY KEY, data jsonb NOT NULL);
CREATE TABLE $S.root_keys (
  id text COLLATE "C" PRIMARY KEY, workspace_id text COLLATE "C" NOT NULL, hash text NOT NULL UNIQUE, data jsonb NOT NULL);
CREATE INDEX ON $S.root_keys (workspace_id, id);
CREATE TABLE $S.apis (id text COLLATE "C" PRIMARY KEY, workspace_id text COLLATE "C" NOT NULL, data jsonb NOT NULL);
CREATE INDEX ON $S.apis (workspace_id, id);
CREATE TABLE $S.permissions (
  id text COLLATE "C" PRIMARY KEY, workspace_id text COLLATE "C" NOT NULL, slug text NOT NULL, data jsonb NOT NULL);
CREATE INDEX ON $S.permissions (workspace_id, id);
CREATE INDEX ON $S.permissions (workspace_id, slug, id);
CREATE TABLE $S.roles (
  id text COLLATE "C" PRIMARY KEY, workspace_id text COLLATE "C" NOT NULL, name text NOT NULL, data jsonb NOT NULL);
CREATE INDEX ON $S.roles (workspace_id, id);
CREATE INDEX ON $S.roles (workspace_id, name, id);
CREATE TABLE $S.identities (
  id text COLLATE "C" PRIMARY KEY, workspace_id text COLLATE "C" NOT NULL, external_id text NOT NULL, data jsonb NOT NULL);
CREATE INDEX ON $S.identities (workspace_id, id);
CREATE INDEX ON $S.identities (workspace_id, external_id, id);
CREATE TABLE $S.keys (
  id text COLLATE "C" PRIMARY KEY,
  workspace_id text COLLATE "C" NOT NULL,
  api_id text COLLATE "C" NOT NULL,
  hash text NOT NULL UNIQUE,
  identity_id text COLLATE "C",
  credits_remaining bigint,
  credits_last_refill_at bigint,
  credits_refill jsonb,
  data jsonb NOT NULL);
CREATE INDEX ON $S.keys (workspace_id, id);
CREATE INDEX ON $S.keys (workspace_id, api_id, id);
CREATE INDEX ON $S.keys (api_id);
CREATE INDEX ON $S.keys (workspace_id, identity_id, id);
CREATE INDEX ON $S.keys (identity_id) WHERE identity_id IS NOT NULL;
CREATE TABLE $S.key_permissions (key_id text COLLATE "C" NOT NULL, permission_id text COLLATE "C" NOT NULL, position int NOT NULL);
CREATE INDEX ON $S.key_permissions (key_id);
CREATE INDEX ON $S.key_permissions (permission_id);
CREATE TABLE $S.key_roles (key_id text COLLATE "C" NOT NULL, role_id text COLLATE "C" NOT NULL, position int NOT NULL);
CREATE INDEX ON $S.key_roles (key_id);
CREATE INDEX ON $S.key_roles (role_id);
CREATE TABLE $S.role_permissions (role_id text COLLATE "C" NOT NULL, permission_id text COLLATE "C" NOT NULL, position int NOT NULL);
CREATE INDEX ON $S.role_permissions (role_id);
CREATE INDEX ON $S.role_permissions (permission_id);
`,
  },
  {
    version: 2,
    name: "rate-limit namespaces and overrides",
    sql: `
CREATE TABLE $S.ratelimit_namespaces (
  id text COLLATE "C" PRIMARY KEY, workspace_id text COLLATE "C" NOT NULL, name text NOT NULL, data jsonb NOT NULL);
CREATE INDEX ON $S.ratelimit_namespaces (workspace_id, id);
CREATE INDEX ON $S.ratelimit_namespaces (workspace_id, name, id);
CREATE TABLE $S.ratelimit_overrides (
  id text COLLATE "C" PRIMARY KEY, workspace_id text COLLATE "C" NOT NULL, namespace_id text COLLATE "C" NOT NULL, data jsonb NOT NULL);
CREATE INDEX ON $S.ratelimit_overrides (workspace_id, id);
CREATE INDEX ON $S.ratelimit_overrides (workspace_id, namespace_id, id);
CREATE INDEX ON $S.ratelimit_overrides (namespace_id);
`,
  },
  {
    version: 3,
    name: "verification events and keys' last use",
    sql: `
CREATE TABLE $S.key_verifications (
  "time" bigint NOT NULL,
  workspace_id text COLLATE "C" NOT NULL,
  key_space_id text COLLATE "C" NOT NULL,
  key_id text COLLATE "C" NOT NULL,
  identity_id text COLLATE "C" NOT NULL,
  external_id text COLLATE "C" NOT NULL,
  outcome text COLLATE "C" NOT NULL,
  tags text[] NOT NULL,
  spent_credits bigint NOT NULL,
  request_id text COLLATE "C" NOT NULL,
  region text COLLATE "C" NOT NULL);
CREATE INDEX ON $S.key_verifications (workspace_id, "time");
CREATE INDEX ON $S.key_verifications ("time");
CREATE TABLE $S.key_last_used (key_id text COLLATE "C" PRIMARY KEY, at bigint NOT NULL);
`,
  },
  {
    version: 4,
    name: "verification counts per hour and per day",
    sql: `
-- By outcome and by every dimension, kept as events are appended (analytics/rollup.ts); made here
-- from the events already stored.
CREATE TABLE $S.key_verifications_per_hour (
  bucket bigint NOT NULL,
  workspace_id text COLLATE "C" NOT NULL,
  key_space_id text COLLATE "C" NOT NULL,
  key_id text COLLATE "C" NOT NULL,
  identity_id text COLLATE "C" NOT NULL,
  external_id text COLLATE "C" NOT NULL,
  outcome text COLLATE "C" NOT NULL,
  tags text[] NOT NULL,
  region text COLLATE "C" NOT NULL,
  n bigint NOT NULL,
  spent_credits bigint NOT NULL,
  PRIMARY KEY (workspace_id, bucket, key_space_id, key_id, identity_id, external_id, outcome, tags, region));
CREATE INDEX ON $S.key_verifications_per_hour (bucket);
INSERT INTO $S.key_verifications_per_hour (bucket, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region, n, spent_credits)
  SELECT ("time" / 3600000) * 3600000, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region, count(*), sum(spent_credits)
  FROM $S.key_verifications GROUP BY 1, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region;
CREATE TABLE $S.key_verifications_per_day (
  bucket bigint NOT NULL,
  workspace_id text COLLATE "C" NOT NULL,
  key_space_id text COLLATE "C" NOT NULL,
  key_id text COLLATE "C" NOT NULL,
  identity_id text COLLATE "C" NOT NULL,
  external_id text COLLATE "C" NOT NULL,
  outcome text COLLATE "C" NOT NULL,
  tags text[] NOT NULL,
  region text COLLATE "C" NOT NULL,
  n bigint NOT NULL,
  spent_credits bigint NOT NULL,
  PRIMARY KEY (workspace_id, bucket, key_space_id, key_id, identity_id, external_id, outcome, tags, region));
CREATE INDEX ON $S.key_verifications_per_day (bucket);
INSERT INTO $S.key_verifications_per_day (bucket, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region, n, spent_credits)
  SELECT ("time" / 86400000) * 86400000, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region, count(*), sum(spent_credits)
  FROM $S.key_verifications GROUP BY 1, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region;
CREATE TABLE $S.key_verifications_outcomes_per_hour (
  bucket bigint NOT NULL,
  workspace_id text COLLATE "C" NOT NULL,
  key_space_id text COLLATE "C" NOT NULL,
  outcome text COLLATE "C" NOT NULL,
  n bigint NOT NULL,
  spent_credits bigint NOT NULL,
  PRIMARY KEY (workspace_id, bucket, key_space_id, outcome));
CREATE INDEX ON $S.key_verifications_outcomes_per_hour (bucket);
INSERT INTO $S.key_verifications_outcomes_per_hour (bucket, workspace_id, key_space_id, outcome, n, spent_credits)
  SELECT ("time" / 3600000) * 3600000, workspace_id, key_space_id, outcome, count(*), sum(spent_credits)
  FROM $S.key_verifications GROUP BY 1, workspace_id, key_space_id, outcome;
CREATE TABLE $S.key_verifications_outcomes_per_day (
  bucket bigint NOT NULL,
  workspace_id text COLLATE "C" NOT NULL,
  key_space_id text COLLATE "C" NOT NULL,
  outcome text COLLATE "C" NOT NULL,
  n bigint NOT NULL,
  spent_credits bigint NOT NULL,
  PRIMARY KEY (workspace_id, bucket, key_space_id, outcome));
CREATE INDEX ON $S.key_verifications_outcomes_per_day (bucket);
INSERT INTO $S.key_verifications_outcomes_per_day (bucket, workspace_id, key_space_id, outcome, n, spent_credits)
  SELECT ("time" / 86400000) * 86400000, workspace_id, key_space_id, outcome, count(*), sum(spent_credits)
  FROM $S.key_verifications GROUP BY 1, workspace_id, key_space_id, outcome;
`,
  },
  {
    version: 5,
    name: "audit log",
    sql: `
CREATE TABLE $S.audit_events (
  id text COLLATE "C" PRIMARY KEY,
  workspace_id text COLLATE "C" NOT NULL,
  "time" bigint NOT NULL,
  actor_id text COLLATE "C" NOT NULL,
  operation text COLLATE "C" NOT NULL,
  targets text[] COLLATE "C" NOT NULL,
  data jsonb NOT NULL);
CREATE INDEX ON $S.audit_events (workspace_id, id);
CREATE INDEX ON $S.audit_events ("time");
CREATE INDEX ON $S.audit_events USING gin (targets);
`,
  },
  {
    version: 6,
    name: "webhook outbox",
    sql: `
CREATE TABLE $S.webhook_outbox (
  id text COLLATE "C" PRIMARY KEY,
  workspace_id text COLLATE "C" NOT NULL,
  endpoint_id text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL,
  next_attempt_at bigint NOT NULL,
  data jsonb NOT NULL);
CREATE INDEX ON $S.webhook_outbox (status, next_attempt_at);
CREATE INDEX ON $S.webhook_outbox (workspace_id, endpoint_id, id);
`,
  },
  {
    version: 7,
    name: "keys by expiry",
    sql: `
-- The scan for key.expiring notices reads a range of keys' expiry (a field of data).
CREATE INDEX keys_by_expiry ON $S.keys (((data->>'expires')::bigint)) WHERE data ? 'expires';
`,
  },
  {
    version: 8,
    name: "rows left by deletions that raced writes",
    sql: `
-- Before this version a deletion racing writes could leave rows pointing at what it deleted: keys
-- of a deleted API (which still verified), keys joined to a deleted identity, links of deleted
-- keys, permissions and roles. They go as the deletion would have taken them.
DELETE FROM $S.keys k WHERE NOT EXISTS (SELECT 1 FROM $S.apis a WHERE a.id = k.api_id);
UPDATE $S.keys k SET identity_id = NULL
  WHERE k.identity_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM $S.identities i WHERE i.id = k.identity_id);
DELETE FROM $S.key_permissions l
  WHERE NOT EXISTS (SELECT 1 FROM $S.keys k WHERE k.id = l.key_id)
     OR NOT EXISTS (SELECT 1 FROM $S.permissions p WHERE p.id = l.permission_id);
DELETE FROM $S.key_roles l
  WHERE NOT EXISTS (SELECT 1 FROM $S.keys k WHERE k.id = l.key_id) OR NOT EXISTS (SELECT 1 FROM $S.roles r WHERE r.id = l.role_id);
DELETE FROM $S.role_permissions l
  WHERE NOT EXISTS (SELECT 1 FROM $S.roles r WHERE r.id = l.role_id)
     OR NOT EXISTS (SELECT 1 FROM $S.permissions p WHERE p.id = l.permission_id);
`,
  },
  {
    version: 9,
    name: "audit chain",
    sql: `
-- Each audit record's place in its workspace's chain (NULL: written before the chain), and each
-- workspace's head: the place and hash of its last record, locked by every append to it.
ALTER TABLE $S.audit_events ADD COLUMN chain_seq bigint;
CREATE INDEX audit_events_by_chain ON $S.audit_events (workspace_id, chain_seq, id) WHERE chain_seq IS NOT NULL;
CREATE TABLE $S.audit_chain (workspace_id text COLLATE "C" PRIMARY KEY, seq bigint NOT NULL, hash text NOT NULL);
`,
  },
  {
    version: 10,
    name: "customer portals and their sessions",
    sql: `
-- A session's code and token are kept as hashes only, in data.
CREATE TABLE $S.portals (id text COLLATE "C" PRIMARY KEY, workspace_id text COLLATE "C" NOT NULL, data jsonb NOT NULL);
CREATE INDEX ON $S.portals (workspace_id, id);
CREATE TABLE $S.portal_sessions (id text COLLATE "C" PRIMARY KEY, workspace_id text COLLATE "C" NOT NULL, data jsonb NOT NULL);
CREATE INDEX ON $S.portal_sessions (workspace_id, id);
`,
  },
  {
    version: 11,
    name: "rate-limit counts",
    sql: `
-- Counts of ratelimit.limit outcomes per namespace and hour (Unix ms of its start); every instance adds to them.
CREATE TABLE $S.ratelimit_counts (
  workspace_id text COLLATE "C" NOT NULL,
  namespace_id text COLLATE "C" NOT NULL,
  hour bigint NOT NULL,
  passed bigint NOT NULL,
  limited bigint NOT NULL,
  PRIMARY KEY (workspace_id, namespace_id, hour));
`,
  },
  {
    version: 12,
    name: "audit chain's previous hash",
    sql: `
-- The head's hash before its last append: one statement moves the head and places the record after it.
ALTER TABLE $S.audit_chain ADD COLUMN prev_hash text;
`,
  },
  {
    version: 13,
    name: "optimistic writes' check",
    sql: `
-- An optimistic transaction's statement calls it with whether every record its operation read is
-- as it was read (optimistic.ts): when one changed, the statement fails with SQLSTATE KG001 and
-- writes nothing, and the store runs the operation again with locks.
CREATE OR REPLACE FUNCTION $S.unchanged(holds boolean) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $body$
BEGIN
  IF holds IS NOT TRUE THEN
    RAISE EXCEPTION 'a record read by an optimistic transaction changed before its writes' USING ERRCODE = 'KG001';
  END IF;
  RETURN true;
END
$body$;
`,
  },
];

/** The schema version this code writes. */
const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** `"name"`: a schema name quoted for SQL (names are checked by the options: letters, digits, `_`). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Creates the schema if needed and applies the migrations it lacks, holding a session advisory
 * lock named after the schema the whole time. Refuses a database written by a newer version.
 */
export async function migrate(client: PoolClient, schema: string): Promise<void> {
  const s = quoteIdent(schema);
  const lock = `keyguard.migrate.${schema}`;
  await client.query("SELECT pg_advisory_lock(hashtext($1))", [lock]);
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${s}.schema_migrations`);
    const current = rows[0]?.v ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new Error(
        `keyguard/server: the PostgreSQL schema ${schema} is at version ${current}, newer than this keyguard (${SCHEMA_VERSION}). Upgrade keyguard.`,
      );
    }
    for (const m of MIGRATIONS) {
      if (m.version <= current) continue;
      await client.query("BEGIN");
      try {
        await client.query(m.sql.replaceAll("$S", s));
        await client.query(`INSERT INTO ${s}.schema_migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw err;
      }
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock(hashtext($1))", [lock]).catch(() => undefined);
  }
}
