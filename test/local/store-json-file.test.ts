// The JSON data file's store (the memory store written to `dataFile` after each change): the
// store conformance suite, and what it writes.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { jsonFileStore } from "../../src/local/stores/json-file";
import { describeStoreConformance } from "./store-conformance";

const dir = mkdtempSync(join(tmpdir(), "keyguard-json-store-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeStoreConformance("json-file", async () => jsonFileStore(join(dir, "conformance.json")).store);

describe("json-file store", () => {
  it("writes nothing until a change, then the whole state after each committed change", async () => {
    const file = join(dir, "writes.json");
    const { store, restored } = jsonFileStore(file);
    expect(restored).toBe(false);
    await store.direct.get("keys", "key_x");
    expect(() => readFileSync(file)).toThrow(/ENOENT/);
    await store.transaction(async (tx) => {
      await tx.put("workspaces", { id: "ws_1", name: "w", createdAt: 0 });
      await tx.setMeta("workspaces", JSON.stringify(["ws_1"]));
    });
    expect(JSON.parse(readFileSync(file, "utf8")).workspaces).toEqual({ ws_1: { id: "ws_1", name: "w", createdAt: 0 } });
    // A transaction that throws writes nothing.
    await expect(
      store.transaction(async (tx) => {
        await tx.put("workspaces", { id: "ws_1", name: "renamed", createdAt: 0 });
        throw new Error("no");
      }),
    ).rejects.toThrow("no");
    expect(JSON.parse(readFileSync(file, "utf8")).workspaces.ws_1.name).toBe("w");
    const again = jsonFileStore(file);
    expect(again.restored).toBe(true);
    expect(await again.store.direct.get("workspaces", "ws_1")).toEqual({ id: "ws_1", name: "w", createdAt: 0 });
  });
});
