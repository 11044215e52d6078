// The SQLite store's schema: an ordered list of migrations shipped in the package, applied at open
// and recorded in `PRAGMA user_version`. Append a step to change the schema; never edit a shipped one.
import { LocalServiceConfigError } from "../../errors";
import type { SqlConnection } from "./driver";

/** Marks a keyguard database (`PRAGMA application_id`): "kgrd". */
export const APPLICATION_ID = 0x6b677264;

/**
 * Step N (1-based) brings a database from version N-1 to N. Queried fields are columns with
 * indexes; the rest of a record is JSON text in `data`. Key↔permission, key↔role and
 * role↔permission are link tables (ordered by `position`), so a deletion cascades by index.
 */
export const MIGRATIONS: readonly string[] = Object.freeze([
  `
  CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

  CREATE TABLE workspaces (id TEXT PRIMARY KEY, data TEXT NOT NULL) WITHOUT ROWID;

  CREATE TABLE root_keys (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, data TEXT NOT NULL) WITHOUT ROWID;
  CREATE INDEX root_keys_by_workspace ON root_keys (workspace_id, id);

  CREATE TABLE apis (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
  CREATE INDEX apis_by_workspace ON apis (workspace_id, id);

  CREATE TABLE permissions (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, slug TEXT NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
  CREATE INDEX permissions_by_workspace ON permissions (workspace_id, id);
  CREATE INDEX permissions_by_slug ON permissions (workspace_id, slug, id);

  CREATE TABLE roles (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
  CREATE INDEX roles_by_workspace ON roles (workspace_id, id);
  CREATE INDEX roles_by_name ON roles (workspace_id, name, id);

  CREATE TABLE identities (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, external_id TEXT NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
  CREATE INDEX identities_by_workspace ON identities (workspace_id, id);
  CREATE INDEX identities_by_external_id ON identities (workspace_id, external_id, id);

  CREATE TABLE keys (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    api_id TEXT NOT NULL,
    identity_id TEXT,
    hash TEXT NOT NULL UNIQUE,
    -- NULL: the key has no credits (unlimited).
    credits_remaining INTEGER,
    credits_last_refill_at INTEGER,
    credits_refill TEXT,
    data TEXT NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX keys_by_workspace ON keys (workspace_id, id);
  CREATE INDEX keys_by_api ON keys (workspace_id, api_id, id);
  CREATE INDEX keys_by_identity ON keys (identity_id, id) WHERE identity_id IS NOT NULL;

  CREATE TABLE key_permissions (key_id TEXT NOT NULL, position INTEGER NOT NULL, permission_id TEXT NOT NULL, PRIMARY KEY (key_id, position)) WITHOUT ROWID;
  CREATE INDEX key_permissions_by_permission ON key_permissions (permission_id);
  CREATE TABLE key_roles (key_id TEXT NOT NULL, position INTEGER NOT NULL, role_id TEXT NOT NULL, PRIMARY KEY (key_id, position)) WITHOUT ROWID;
  CREATE INDEX key_roles_by_role ON key_roles (role_id);
  CREATE TABLE role_permissions (role_id TEXT NOT NULL, position INTEGER NOT NULL, permission_id TEXT NOT NULL, PRIMARY KEY (role_id, position)) WITHOUT ROWID;
  CREATE INDEX role_permissions_by_permission ON role_permissions (permission_id);

  -- Sliding-window rate-limit counters; a row is useless from expires_at = (win + 2) × duration on.
  CREATE TABLE counters (
    counter TEXT PRIMARY KEY,
    owner TEXT,
    duration INTEGER NOT NULL,
    win INTEGER NOT NULL,
    cur REAL NOT NULL,
    prev REAL NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX counters_by_owner ON counters (owner) WHERE owner IS NOT NULL;
  CREATE INDEX counters_by_expiry ON counters (expires_at);
  `,
  `
  CREATE TABLE ratelimit_namespaces (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
  CREATE INDEX ratelimit_namespaces_by_workspace ON ratelimit_namespaces (workspace_id, id);
  CREATE INDEX ratelimit_namespaces_by_name ON ratelimit_namespaces (workspace_id, name, id);

  CREATE TABLE ratelimit_overrides (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, namespace_id TEXT NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
  CREATE INDEX ratelimit_overrides_by_workspace ON ratelimit_overrides (workspace_id, id);
  CREATE INDEX ratelimit_overrides_by_namespace ON ratelimit_overrides (workspace_id, namespace_id, id);
  CREATE INDEX ratelimit_overrides_by_namespace_only ON ratelimit_overrides (namespace_id);
  `,
  `
  -- Verification events (key_verifications_v1 of analytics.getVerifications); tags: a JSON array.
  CREATE TABLE key_verifications (
    time INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    key_space_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    identity_id TEXT NOT NULL,
    external_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    tags TEXT NOT NULL,
    spent_credits INTEGER NOT NULL,
    request_id TEXT NOT NULL,
    region TEXT NOT NULL
  );
  -- One index (each costs every insert): time serves the retention delete, time ranges and ORDER BY time.
  CREATE INDEX key_verifications_by_time ON key_verifications (time);
  CREATE TABLE key_last_used (key_id TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;
  `,
  `
  -- Verification counts per hour and per day, by outcome and by every dimension (analytics/rollup.ts),
  -- kept as events are appended;
  -- made here from the events already stored.
  CREATE TABLE key_verifications_per_hour (
    bucket INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    key_space_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    identity_id TEXT NOT NULL,
    external_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    tags TEXT NOT NULL,
    region TEXT NOT NULL,
    n INTEGER NOT NULL,
    spent_credits INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, bucket, key_space_id, key_id, identity_id, external_id, outcome, tags, region)
  ) WITHOUT ROWID;
  CREATE INDEX key_verifications_per_hour_by_bucket ON key_verifications_per_hour (bucket);
  INSERT INTO key_verifications_per_hour (bucket, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region, n, spent_credits)
    SELECT (time / 3600000) * 3600000, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region, count(*), sum(spent_credits)
    FROM key_verifications GROUP BY 1, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region;
  CREATE TABLE key_verifications_per_day (
    bucket INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    key_space_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    identity_id TEXT NOT NULL,
    external_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    tags TEXT NOT NULL,
    region TEXT NOT NULL,
    n INTEGER NOT NULL,
    spent_credits INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, bucket, key_space_id, key_id, identity_id, external_id, outcome, tags, region)
  ) WITHOUT ROWID;
  CREATE INDEX key_verifications_per_day_by_bucket ON key_verifications_per_day (bucket);
  INSERT INTO key_verifications_per_day (bucket, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region, n, spent_credits)
    SELECT (time / 86400000) * 86400000, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region, count(*), sum(spent_credits)
    FROM key_verifications GROUP BY 1, workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags, region;
  CREATE TABLE key_verifications_outcomes_per_hour (
    bucket INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    key_space_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    n INTEGER NOT NULL,
    spent_credits INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, bucket, key_space_id, outcome)
  ) WITHOUT ROWID;
  CREATE INDEX key_verifications_outcomes_per_hour_by_bucket ON key_verifications_outcomes_per_hour (bucket);
  INSERT INTO key_verifications_outcomes_per_hour (bucket, workspace_id, key_space_id, outcome, n, spent_credits)
    SELECT (time / 3600000) * 3600000, workspace_id, key_space_id, outcome, count(*), sum(spent_credits)
    FROM key_verifications GROUP BY 1, workspace_id, key_space_id, outcome;
  CREATE TABLE key_verifications_outcomes_per_day (
    bucket INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    key_space_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    n INTEGER NOT NULL,
    spent_credits INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, bucket, key_space_id, outcome)
  ) WITHOUT ROWID;
  CREATE INDEX key_verifications_outcomes_per_day_by_bucket ON key_verifications_outcomes_per_day (bucket);
  INSERT INTO key_verifications_outcomes_per_day (bucket, workspace_id, key_space_id, outcome, n, spent_credits)
    SELECT (time / 86400000) * 86400000, workspace_id, key_space_id, outcome, count(*), sum(spent_credits)
    FROM key_verifications GROUP BY 1, workspace_id, key_space_id, outcome;
  `,
  `
  -- The audit log: each record whole as JSON in data; the fields its queries filter on as columns.
  CREATE TABLE audit_events (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    time INTEGER NOT NULL,
    actor_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    data TEXT NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX audit_events_by_workspace ON audit_events (workspace_id, id);
  CREATE INDEX audit_events_by_time ON audit_events (time);
  -- Each target id of a record: a key's history is found by index.
  CREATE TABLE audit_targets (target TEXT NOT NULL, audit_id TEXT NOT NULL, PRIMARY KEY (target, audit_id)) WITHOUT ROWID;
  CREATE INDEX audit_targets_by_audit ON audit_targets (audit_id);
  `,
  `
  -- The webhook outbox: each message whole as JSON in data; what delivery selects on as columns.
  CREATE TABLE webhook_outbox (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    endpoint_id TEXT NOT NULL,
    status TEXT NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    data TEXT NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX webhook_outbox_due ON webhook_outbox (status, next_attempt_at);
  CREATE INDEX webhook_outbox_by_workspace ON webhook_outbox (workspace_id, endpoint_id, id);
  `,
  `
  -- Keys by expiry (a field of data): the scan for key.expiring notices reads a range of it.
  CREATE INDEX keys_by_expiry ON keys (json_extract(data, '$.expires')) WHERE json_extract(data, '$.expires') IS NOT NULL;
  `,
  `
  -- The audit chain: each record's place in its workspace's chain (NULL: written before the chain),
  -- and each workspace's head (the place and hash of its last record).
  ALTER TABLE audit_events ADD COLUMN chain_seq INTEGER;
  CREATE INDEX audit_events_by_chain ON audit_events (workspace_id, chain_seq, id) WHERE chain_seq IS NOT NULL;
  CREATE TABLE audit_chain (workspace_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL) WITHOUT ROWID;
  `,
  `
  -- Customer portals and their sessions (a session's code and token as hashes only, in data).
  CREATE TABLE portals (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
  CREATE INDEX portals_by_workspace ON portals (workspace_id, id);
  CREATE TABLE portal_sessions (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
  CREATE INDEX portal_sessions_by_workspace ON portal_sessions (workspace_id, id);
  `,
  `
  -- Counts of ratelimit.limit outcomes per namespace and hour (Unix ms of its start).
  CREATE TABLE ratelimit_counts (
    workspace_id TEXT NOT NULL,
    namespace_id TEXT NOT NULL,
    hour INTEGER NOT NULL,
    passed INTEGER NOT NULL,
    limited INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, namespace_id, hour)
  ) WITHOUT ROWID;
  `,
  `
  -- Target links are deleted by their primary key (the targets of each record retention deletes):
  -- one B-tree fewer for every audited write.
  DROP INDEX IF EXISTS audit_targets_by_audit;
  `,
]);

function pragmaNumber(db: SqlConnection, name: string): number {
  const row = db.prepare(`PRAGMA ${name}`).get();
  return Number(row ? Object.values(row)[0] : 0);
}

/**
 * Brings the database to the latest schema, one transaction per step. Refuses a database of
 * another program, and one written by a newer keyguard (whose schema this version cannot know).
 */
export function migrate(db: SqlConnection, file: string): void {
  const name = JSON.stringify(file);
  const version = pragmaNumber(db, "user_version");
  const appId = pragmaNumber(db, "application_id");
  if (version === 0) {
    const tables = Number(db.prepare("SELECT count(*) AS n FROM sqlite_schema").get()?.n ?? 0);
    if (tables > 0 && appId !== APPLICATION_ID) {
      throw new LocalServiceConfigError(`keyguard/server: ${name} is a SQLite database of another program. Use another path.`);
    }
  } else if (appId !== APPLICATION_ID) {
    throw new LocalServiceConfigError(`keyguard/server: ${name} is a SQLite database of another program. Use another path.`);
  }
  if (version > MIGRATIONS.length) {
    throw new LocalServiceConfigError(
      `keyguard/server: ${name} has schema version ${version}, written by a newer keyguard; this one knows up to ` +
        `${MIGRATIONS.length}. Upgrade keyguard, or restore a backup made by this version.`,
    );
  }
  for (let step = version; step < MIGRATIONS.length; step++) {
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(MIGRATIONS[step]!);
      db.exec(`PRAGMA application_id = ${APPLICATION_ID}`);
      db.exec(`PRAGMA user_version = ${step + 1}`);
      db.exec("COMMIT");
    } catch (err) {
      db.exec("ROLLBACK");
      throw err;
    }
  }
}
