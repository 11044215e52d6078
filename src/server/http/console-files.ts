// The web console's files, served next to the API when the `console` option is on: `/` is its
// page, `/console/<file>` its script, style and icon; and the hosted portal's, `/portal/` and
// `/portal/<file>` (built into dist/console/portal). Read once from the package's dist/console
// (built by `npm run build`), kept in memory with their gzip form and an ETag. Every answer carries
// a strict Content-Security-Policy (no inline script or style), X-Frame-Options DENY, nosniff and
// no referrer.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { dirname, extname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { LocalServiceConfigError } from "../errors";

const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};

const CONSOLE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "Content-Security-Policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
});

/** The portal's pages: the same, but the operator's logo may be any https: image. */
const PORTAL_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  ...CONSOLE_HEADERS,
  "Content-Security-Policy": CONSOLE_HEADERS["Content-Security-Policy"]!.replace("img-src 'self'", "img-src 'self' https:"),
});

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer;
  etag: string;
}

/** Serves one console request; false when the path is not the console's. */
export type ConsoleHandler = (req: IncomingMessage, res: ServerResponse, path: string) => boolean;

/** Where the built console is: next to the bundle (dist/console), or the repository's dist/console when run from source. */
function consoleDir(): string | undefined {
  const here = dirname(fileURLToPath(import.meta.url));
  return [join(here, "console"), resolve(here, "../../../dist/console")].find((dir) => existsSync(join(dir, "index.html")));
}

/** The files of `dir` by path: its index.html at `page`, the others under `files`. */
function load(dir: string, page: string, files: string, assets = new Map<string, Asset>()): Map<string, Asset> {
  if (!existsSync(dir)) return assets;
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (!type) continue;
    const body = readFileSync(join(dir, name));
    const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
    assets.set(name === "index.html" ? page : `${files}${name}`, { type, body, gzip: gzipSync(body, { level: 9 }), etag });
  }
  return assets;
}

/** The console's request handler; throws a config error when its files are missing. */
export function consoleHandler(): ConsoleHandler {
  const dir = consoleDir();
  if (!dir) {
    throw new LocalServiceConfigError(
      "keyguard/server: invalid option console = true: the console's files (dist/console) are missing. " +
        "Run npm run build in the keyguard repository, or turn the console off.",
      { option: "console" },
    );
  }
  const assets = load(join(dir, "portal"), "/portal/", "/portal/", load(dir, "/", "/console/"));
  return (req, res, path) => {
    const asset = assets.get(path === "/index.html" ? "/" : path);
    if (!asset) return false;
    const headers = path.startsWith("/portal/") ? PORTAL_HEADERS : CONSOLE_HEADERS;
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    if (req.method !== "GET" && req.method !== "HEAD") {
      req.resume();
      res.statusCode = 405;
      res.setHeader("Allow", "GET, HEAD");
      res.setHeader("Content-Type", "text/plain; charset=utf-8");
      res.end(`${req.method} is not allowed here; use GET.`);
      return true;
    }
    // Revalidated on every load (cheap: 304 by ETag), so a new version is never hidden by a cache.
    res.setHeader("Cache-Control", "no-cache");
    res.setHeader("ETag", asset.etag);
    res.setHeader("Vary", "Accept-Encoding");
    res.setHeader("Content-Type", asset.type);
    if (req.headers["if-none-match"] === asset.etag) {
      res.statusCode = 304;
      res.end();
      return true;
    }
    const gzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
    const body = gzip ? asset.gzip : asset.body;
    if (gzip) res.setHeader("Content-Encoding", "gzip");
    res.setHeader("Content-Length", body.length);
    res.statusCode = 200;
    res.end(req.method === "HEAD" ? undefined : body);
    return true;
  };
}
