// The data file: the whole state as JSON, written atomically (temp file, fsync, rename) so a
// crash leaves either the old or the new state, never a torn file.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { LocalServiceConfigError } from "./options";
import type { LocalState } from "./store";

/** The tables every state file holds, each an object of records by id. */
const TABLES = ["workspaces", "rootKeys", "apis", "keys", "permissions", "roles", "identities", "windows"] as const;

function isTable(v: unknown): boolean {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Reads the state from `file`; undefined when the file does not exist yet. */
export function loadState(file: string): LocalState | undefined {
  const name = JSON.stringify(file);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new LocalServiceConfigError(`keyguard/local: cannot read dataFile ${name}: ${(err as Error).message}`);
  }
  let state: unknown;
  try {
    state = JSON.parse(text);
  } catch {
    throw new LocalServiceConfigError(
      `keyguard/local: dataFile ${name} is not valid JSON. Move it away to start with an empty state.`,
    );
  }
  const s = state as Record<string, unknown> | null;
  if (!isTable(s) || s!.version !== 1) {
    throw new LocalServiceConfigError(
      `keyguard/local: dataFile ${name} is not a keyguard state file (version 1). Use another path.`,
    );
  }
  const broken = TABLES.find((table) => !isTable(s![table]));
  if (broken !== undefined) {
    throw new LocalServiceConfigError(
      `keyguard/local: dataFile ${name} is damaged: the table ${JSON.stringify(broken)} is missing or not an object. ` +
        "Restore the file from a backup, or move it away to start with an empty state.",
    );
  }
  return s as unknown as LocalState;
}

/** Writes the serialized state (`text`) to `file` atomically and durably. */
export function saveState(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  let open = true;
  try {
    // writeFileSync on a descriptor loops until every byte is written.
    writeFileSync(fd, text, "utf8");
    fsyncSync(fd);
    closeSync(fd);
    open = false;
    renameSync(tmp, file);
  } catch (err) {
    if (open) closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  try {
    const dir = openSync(dirname(file), "r");
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  } catch {
    // Directories cannot be fsynced on every platform; the rename itself is atomic.
  }
}
