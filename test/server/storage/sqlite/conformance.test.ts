// The store conformance suite on the SQLite store: with each SQLite driver this runtime has.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { hasNodeSqlite, openConnection } from "../../../../src/server/storage/sqlite/driver";
import { sqliteStorage } from "../../../../src/server/storage/sqlite/store";
import { describeStoreConformance } from "../store-conformance";

const dir = mkdtempSync(join(tmpdir(), "keyguard-sqlite-conformance-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Why better-sqlite3 cannot run here (its native module is built for one Node.js ABI), or undefined. */
async function betterSqlite3Missing(): Promise<string | undefined> {
  try {
    (await openConnection(join(dir, "probe.db"), "better-sqlite3")).close();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
const noBetterSqlite3 = await betterSqlite3Missing();
if (noBetterSqlite3) console.log(`store conformance: sqlite (better-sqlite3) did not run: ${noBetterSqlite3}`);
describeStoreConformance("sqlite (better-sqlite3)", () => sqliteStorage(join(dir, "better.db"), { driver: "better-sqlite3" }), {
  skip: noBetterSqlite3,
});

const noNodeSqlite = hasNodeSqlite() ? undefined : `node:sqlite needs Node.js 22.13 or later; this is ${process.version}`;
if (noNodeSqlite) console.log(`store conformance: sqlite (node:sqlite) did not run: ${noNodeSqlite}`);
describeStoreConformance("sqlite (node:sqlite)", () => sqliteStorage(join(dir, "node.db"), { driver: "node:sqlite" }), {
  skip: noNodeSqlite,
});
