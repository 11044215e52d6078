// The keys page with 10,000 keys in one API (seeded through keys.migrateKeys, 1,000 a request): the
// first rows come from the service's first page (25 keys), not from the whole list; "Load more",
// the search (apis.listKeys' search, on the service: it finds the last key, never loaded) and the
// owner filter (apis.listKeys' externalId, applied by the service) work at that size. The time to
// the first row and to a search's answer are printed, not asserted (timings go in bench/).
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RUN_BROWSER } from "./browser";
import { useConsole } from "./harness";

const KEYS = 10_000;
const BATCH = 1000;

const dir = mkdtempSync(join(tmpdir(), "keyguard-10k-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.runIf(RUN_BROWSER).each([
  ["memory", () => ({})],
  ["SQLite", () => ({ dataFile: join(dir, "keys.db") })],
])("console keys page with 10,000 keys, storage %s", (storage, options) => {
  const c = useConsole(options);

  it("shows the first page of 10,000 keys, loads more, searches and filters by owner on the service", async () => {
    const apiName = `ten-thousand-${storage}`;
    const apiId = ((await c.call("apis.createApi", { name: apiName })).body.data as { apiId: string }).apiId;
    const { migrationId } = await c.service.service.createKeyMigration();
    for (let from = 0; from < KEYS; from += BATCH) {
      const keys = Array.from({ length: BATCH }, (_, i) => ({
        hash: createHash("sha256").update(randomBytes(24)).digest("base64"),
        name: `bulk-${String(from + i).padStart(5, "0")}`,
      }));
      const res = await c.call("keys.migrateKeys", { migrationId, apiId, keys });
      expect(res.status, JSON.stringify(res.body.error)).toBe(200);
      expect((res.body.data as { migrated: unknown[] }).migrated).toHaveLength(BATCH);
    }
    const owned = (await c.call("keys.createKey", { apiId, name: "the-owned-one", externalId: "owner_10k" })).body.data as {
      keyId: string;
    };

    const { page, problems } = await c.open();
    await c.signIn(page);
    // From the APIs page, by its link (the console already loaded)...
    const rows = page.locator("table.keys tbody tr");
    let started = performance.now();
    await page.getByRole("link", { name: apiName, exact: true }).click();
    await rows.first().waitFor();
    const byLink = performance.now() - started;
    // ...and a fresh load of the keys page's address.
    started = performance.now();
    await page.reload();
    await rows.first().waitFor();
    const fresh = performance.now() - started;
    console.log(
      `[measured] keys page on ${storage}, ${KEYS + 1} keys in the API: first row ${byLink.toFixed(0)} ms after following the link, ` +
        `${fresh.toFixed(0)} ms after a fresh load of the page`,
    );

    const caption = page.locator("table.keys caption");
    await expect.poll(() => caption.innerText()).toBe("Keys (25 loaded; more on the service)");
    await page.getByRole("button", { name: "Load more keys" }).click();
    await expect.poll(() => caption.innerText()).toBe("Keys (50 loaded; more on the service)");

    // The last key of the 10,000 (never loaded), found by the service; Enter searches at once.
    started = performance.now();
    await page.getByLabel("Search", { exact: true }).fill("bulk-09999");
    await page.getByLabel("Search", { exact: true }).press("Enter");
    await expect.poll(() => caption.innerText()).toBe('Keys (1 loaded, matching "bulk-09999")');
    const searchedIn = performance.now() - started;
    console.log(`[measured] keys page on ${storage}: a search matching 1 key of ${KEYS + 1} answered in ${searchedIn.toFixed(0)} ms`);
    expect(await page.locator("table.keys td.name").allInnerTexts()).toEqual(["bulk-09999"]);
    await page.getByLabel("Search", { exact: true }).fill("");
    await page.getByLabel("Search", { exact: true }).press("Enter");
    await expect.poll(() => caption.innerText()).toBe("Keys (25 loaded; more on the service)");

    await page.getByLabel("Owner", { exact: true }).fill("owner_10k");
    await page.getByLabel("Owner", { exact: true }).press("Enter");
    await expect.poll(() => caption.innerText()).toBe("Keys (1 loaded)");
    expect(await page.locator(`tr[data-key-id="${owned.keyId}"]`).count()).toBe(1);
    await c.expectAccessible(page, "keys page with 10,000 keys");
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);
});
