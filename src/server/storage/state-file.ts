// The whole state as JSON (`LocalState`): exporting it from any store, importing it into an empty
// one, and reading a JSON state file (what `--data` kept before SQLite; `keyguard migrate` imports it).
import { readFileSync } from "node:fs";
import { LocalServiceConfigError, LocalServiceArgumentError } from "../errors";
import { type Storage, type StorageTx } from "./seam";
import { TABLE_NAMES, type LocalState, type WebhookEndpointRecord, type WorkspaceRecord } from "../records";

/** Meta value holding the bootstrap ids, as JSON `{ workspaceId, apiId }`. */
export const BOOTSTRAP_META = "bootstrap";
/** Meta value listing every workspace id, as a JSON array: how an export finds the workspaces. */
const WORKSPACES_META = "workspaces";
/** Meta value holding the registered key migrations, as a JSON object of `KeyMigrationRecord` by id. */
export const KEY_MIGRATIONS_META = "keyMigrations";
/** Meta value holding a workspace's webhook endpoints, as a JSON array of `WebhookEndpointRecord`. */
export const webhookEndpointsMeta = (workspaceId: string): string => `webhooks.${workspaceId}`;

function emptyState(): LocalState {
  return {
    version: 1,
    workspaces: {},
    rootKeys: {},
    apis: {},
    keys: {},
    permissions: {},
    roles: {},
    identities: {},
    ratelimitNamespaces: {},
    ratelimitOverrides: {},
    portals: {},
    portalSessions: {},
    windows: {},
  };
}

async function workspaceIds(tx: StorageTx): Promise<string[]> {
  const raw = await tx.getMeta(WORKSPACES_META);
  return raw === undefined ? [] : (JSON.parse(raw) as string[]);
}

/** Adds a workspace (the record and its place in the list of workspaces). */
export async function putWorkspace(tx: StorageTx, workspace: WorkspaceRecord): Promise<void> {
  const ids = await workspaceIds(tx);
  await tx.put("workspaces", workspace);
  if (!ids.includes(workspace.id)) await tx.setMeta(WORKSPACES_META, JSON.stringify([...ids, workspace.id]));
}

/** The meta values a state implies: what a backend loading a `LocalState` itself must set. */
export function stateMeta(state: LocalState): Array<[name: string, value: string]> {
  const meta: Array<[string, string]> = [[WORKSPACES_META, JSON.stringify(Object.keys(state.workspaces))]];
  if (state.bootstrap) meta.push([BOOTSTRAP_META, JSON.stringify(state.bootstrap)]);
  if (state.keyMigrations && Object.keys(state.keyMigrations).length > 0) {
    meta.push([KEY_MIGRATIONS_META, JSON.stringify(state.keyMigrations)]);
  }
  const endpoints = new Map<string, WebhookEndpointRecord[]>();
  for (const e of Object.values(state.webhookEndpoints ?? {})) endpoints.set(e.workspaceId, [...(endpoints.get(e.workspaceId) ?? []), e]);
  for (const [workspaceId, list] of endpoints) meta.push([webhookEndpointsMeta(workspaceId), JSON.stringify(list)]);
  return meta;
}

/** Every record of every workspace, read through `tx` (inside a transaction for a consistent copy). */
async function exportFrom(tx: StorageTx): Promise<LocalState> {
  const state = emptyState();
  const bootstrap = await tx.getMeta(BOOTSTRAP_META);
  if (bootstrap !== undefined) state.bootstrap = JSON.parse(bootstrap) as LocalState["bootstrap"];
  const migrations = await tx.getMeta(KEY_MIGRATIONS_META);
  if (migrations !== undefined) state.keyMigrations = JSON.parse(migrations) as LocalState["keyMigrations"];
  for (const id of await workspaceIds(tx)) {
    const endpoints = await tx.getMeta(webhookEndpointsMeta(id));
    for (const e of endpoints === undefined ? [] : (JSON.parse(endpoints) as WebhookEndpointRecord[])) {
      (state.webhookEndpoints ??= {})[e.id] = e;
    }
    for (const table of TABLE_NAMES) {
      const records = table === "workspaces" ? [await tx.get("workspaces", id)] : await tx.list(table, id);
      const into = state[table] as Record<string, unknown>;
      for (const record of records) if (record) into[record.id] = record;
    }
  }
  return state;
}

/** The whole state of a store (hashes only, never a key), as one consistent copy. */
export function exportState(store: Storage): Promise<LocalState> {
  return store.transaction(exportFrom);
}

/** Writes a state into an empty store, in one transaction. Counters (`windows`) are not imported. */
export async function importState(store: Storage, state: LocalState): Promise<void> {
  await store.transaction(async (tx) => {
    if ((await workspaceIds(tx)).length > 0 || (await tx.getMeta(BOOTSTRAP_META)) !== undefined) {
      throw new LocalServiceArgumentError("importState: the store is not empty (it already holds a state). Import into a new store.");
    }
    for (const table of TABLE_NAMES) {
      for (const record of Object.values(state[table])) await tx.put(table, record as never);
    }
    for (const [name, value] of stateMeta(state)) await tx.setMeta(name, value);
  });
}

/** Tables added after the first state files: read as empty when absent. */
const LATER_TABLES = ["ratelimitNamespaces", "ratelimitOverrides", "portals", "portalSessions"] as const;

/** The tables every state file holds, each an object of records by id. */
const FILE_TABLES = [...TABLE_NAMES.filter((t) => !(LATER_TABLES as readonly string[]).includes(t)), "windows"] as const;

function isTable(v: unknown): boolean {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Reads a JSON state file (what `--data` wrote before SQLite); undefined when it does not exist. */
export function loadState(file: string): LocalState | undefined {
  const name = JSON.stringify(file);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new LocalServiceConfigError(`keyguard/server: cannot read the state file ${name}: ${(err as Error).message}`);
  }
  let state: unknown;
  try {
    state = JSON.parse(text);
  } catch {
    throw new LocalServiceConfigError(`keyguard/server: the state file ${name} is not valid JSON.`);
  }
  const s = state as Record<string, unknown> | null;
  if (!isTable(s) || s!.version !== 1) {
    throw new LocalServiceConfigError(`keyguard/server: ${name} is not a keyguard state file (version 1).`);
  }
  for (const table of LATER_TABLES) s![table] ??= {};
  const broken = [...FILE_TABLES, ...LATER_TABLES].find((table) => !isTable(s![table]));
  if (broken !== undefined) {
    throw new LocalServiceConfigError(
      `keyguard/server: the state file ${name} is damaged: the table ${JSON.stringify(broken)} is missing or not an object. ` +
        "Restore the file from a backup.",
    );
  }
  return s as unknown as LocalState;
}
