// The console's first visit stays small: the page, script, style and icon as the service sends them
// to a browser that accepts gzip add up to under 28 KB (25 KB until the Portals page, which added
// 1.6 KB). The size is printed.
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { startLocalKeyService, type RunningLocalKeyService } from "keyguard/server";

const BUDGET = 28 * 1024;
let service: RunningLocalKeyService;
beforeAll(async () => {
  service = await startLocalKeyService({ console: true, logger: silentLogger });
});
afterAll(() => service?.close());

/** The bytes on the wire (fetch() would undo gzip itself). */
function wireBytes(url: string): Promise<{ encoding: string | undefined; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { "accept-encoding": "gzip" } }, (res) => {
      let bytes = 0;
      res.on("data", (c: Buffer) => (bytes += c.length));
      res.on("end", () => resolve({ encoding: res.headers["content-encoding"], bytes }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the console's first visit", () => {
  it("transfers under 28 KB with gzip", async () => {
    const sizes: Record<string, number> = {};
    for (const path of ["/", "/console/app.js", "/console/app.css", "/console/icon.svg"]) {
      const { encoding, bytes } = await wireBytes(`${service.baseUrl}${path}`);
      if (path !== "/console/icon.svg") expect(encoding, path).toBe("gzip");
      sizes[path] = bytes;
    }
    const total = Object.values(sizes).reduce((a, b) => a + b, 0);
    console.log(`[measured] console first visit, gzip: ${total} bytes (${JSON.stringify(sizes)})`);
    expect(total).toBeLessThan(BUDGET);
  });
});
