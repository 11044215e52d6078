// The data file: the whole state as JSON, written atomically (temp file, fsync, rename) so a
// crash leaves either the old or the new state, never a torn file.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { LocalServiceConfigError } from "./options";
import type { LocalState } from "./store";

/** Reads the state from `file`; undefined when the file does not exist yet. */
export function loadState(file: string): LocalState | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new LocalServiceConfigError(`keyguard/local: cannot read dataFile ${JSON.stringify(file)}: ${(err as Error).message}`);
  }
  let state: unknown;
  try {
    state = JSON.parse(text);
  } catch {
    throw new LocalServiceConfigError(
      `keyguard/local: dataFile ${JSON.stringify(file)} is not valid JSON. Move it away to start with an empty state.`,
    );
  }
  const s = state as Partial<LocalState> | null;
  if (!s || s.version !== 1 || typeof s.keys !== "object" || typeof s.rootKeys !== "object") {
    throw new LocalServiceConfigError(
      `keyguard/local: dataFile ${JSON.stringify(file)} is not a keyguard state file (version 1). Use another path.`,
    );
  }
  return s as LocalState;
}

/** Writes the state to `file` atomically and durably. */
export function saveState(file: string, state: LocalState): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, JSON.stringify(state));
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, file);
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
