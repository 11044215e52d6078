// `keyguard migrate`: a JSON state file of an earlier keyguard, imported once into a new SQLite
// data file. It never writes into a database that holds anything, and never touches the JSON file.
import { resolve } from "node:path";
import { LocalServiceConfigError } from "../errors";
import { importState, loadState } from "./state-file";
import { TABLE_NAMES } from "../records";
import { sqliteStorage } from "./sqlite/store";

/** How many records of each table were imported. */
type MigrationCounts = Record<(typeof TABLE_NAMES)[number], number>;

/**
 * Imports the JSON state file `jsonFile` into the SQLite data file `dataFile` (created when
 * absent). Refuses a data file that already holds a state.
 */
export async function migrateStateFile(jsonFile: string, dataFile: string): Promise<MigrationCounts> {
  if (resolve(jsonFile) === resolve(dataFile)) {
    throw new LocalServiceConfigError("keyguard migrate: --data must name a new SQLite file, not the JSON state file itself.");
  }
  const state = loadState(jsonFile);
  if (state === undefined) throw new LocalServiceConfigError(`keyguard migrate: ${JSON.stringify(jsonFile)} does not exist.`);
  const store = await sqliteStorage(dataFile);
  try {
    if (!(await store.isEmpty())) {
      throw new LocalServiceConfigError(
        `keyguard migrate: ${JSON.stringify(dataFile)} already holds a state; migrate imports into a new or empty file only ` +
          "and never overwrites. Give another --data path.",
      );
    }
    // One transaction; rate-limit counters are not carried over.
    await importState(store, state);
  } finally {
    await store.close();
  }
  return Object.fromEntries(TABLE_NAMES.map((t) => [t, Object.keys(state[t]).length])) as MigrationCounts;
}
