// The web console's files as the service serves them: content types, security headers, caching
// (ETag, 304), gzip, and nothing changed for other paths or when the console is off.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { createLocalKeyService, type LocalKeyServiceInstance } from "keyguard/server";

async function serve(withConsole: boolean): Promise<{ base: string; instance: LocalKeyServiceInstance; server: Server }> {
  const instance = await createLocalKeyService({ logger: silentLogger, console: withConsole });
  const server = createServer(instance.app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, instance, server };
}

const on = { base: "", close: async () => {} };
const off = { base: "", close: async () => {} };
beforeAll(async () => {
  for (const [target, flag] of [
    [on, true],
    [off, false],
  ] as const) {
    const s = await serve(flag);
    target.base = s.base;
    target.close = async () => {
      await new Promise<void>((resolve) => s.server.close(() => resolve()));
      await s.instance.close();
    };
  }
});
afterAll(async () => {
  await on.close();
  await off.close();
});

const SECURITY = {
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

describe("console files", () => {
  it("serves the page at / with a strict CSP (no inline script or style) and the security headers", async () => {
    const res = await fetch(`${on.base}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    for (const [name, value] of Object.entries(SECURITY)) expect(res.headers.get(name)).toBe(value);
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    const html = await res.text();
    expect(html).toContain('<script defer src="/console/app.js"></script>');
    // Every script has a src (none inline), no style element or attribute, nothing from elsewhere.
    expect(html.match(/<script(?![^>]*\bsrc=)[^>]*>/g)).toBeNull();
    expect(html).not.toMatch(/<style|style=/);
    expect(html).not.toMatch(/https?:\/\//);
    expect(res.headers.get("cache-control")).toBe("no-cache");
  });

  it("serves script, style and icon with their content types, gzip on request, 304 by ETag", async () => {
    for (const [path, type] of [
      ["/console/app.js", "text/javascript; charset=utf-8"],
      ["/console/app.css", "text/css; charset=utf-8"],
      ["/console/icon.svg", "image/svg+xml"],
    ]) {
      const plain = await fetch(`${on.base}${path}`, { headers: { "accept-encoding": "identity" } });
      expect(plain.status, path).toBe(200);
      expect(plain.headers.get("content-type")).toBe(type);
      expect(plain.headers.get("x-content-type-options")).toBe("nosniff");
      const body = Buffer.from(await plain.arrayBuffer());
      expect(body.length).toBeGreaterThan(100);
      const etag = plain.headers.get("etag")!;
      expect(etag).toMatch(/^"[\w-]+"$/);

      // fetch() would undo gzip itself: read the raw bytes over node:http.
      const zipped = await rawGet(`${on.base}${path}`, { "accept-encoding": "gzip" });
      expect(zipped.headers["content-encoding"]).toBe("gzip");
      expect(zipped.headers.vary).toBe("Accept-Encoding");
      expect(gunzipSync(zipped.body).equals(body)).toBe(true);
      expect(zipped.body.length).toBeLessThan(body.length);

      const again = await fetch(`${on.base}${path}`, { headers: { "if-none-match": etag } });
      expect(again.status).toBe(304);
    }
    const js = await (await fetch(`${on.base}/console/app.js`)).text();
    expect(js).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
  });

  it("answers HEAD, refuses other methods, and leaves every other path to the API (404 envelope)", async () => {
    const head = await fetch(`${on.base}/`, { method: "HEAD" });
    expect(head.status).toBe(200);
    const post = await fetch(`${on.base}/`, { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    for (const path of ["/console/missing.js", "/console/", "/index.htm", "/v2/"]) {
      const res = await fetch(`${on.base}${path}`);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: { type: string } }).error.type).toContain("routing/not_found");
    }
    expect((await fetch(`${on.base}/v2/liveness`)).status).toBe(200);
  });

  it("without the console option, / and /console/* answer 404 envelopes as before", async () => {
    for (const path of ["/", "/index.html", "/console/app.js"]) {
      const res = await fetch(`${off.base}${path}`);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("content-security-policy")).toBeNull();
      expect(((await res.json()) as { error: { detail: string } }).error.detail).toContain("No operation at GET");
    }
  });

  it("refuses a console option that is not a boolean", async () => {
    await expect(createLocalKeyService({ logger: silentLogger, console: "yes" as never })).rejects.toThrow(/invalid option console/);
  });
});

async function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  const { request } = await import("node:http");
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}
