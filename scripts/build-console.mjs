// Builds the web console (src/console) into dist/console: one minified script (app.js), one
// stylesheet (app.css), the page (index.html) and the icon. No CDN, nothing inline (the service's
// Content-Security-Policy allows neither). Run by `npm run build`, `npm start`, `npm run serve`,
// and by the test suite's global setup.
//   node scripts/build-console.mjs [outDir]      (default dist/console)
/* global process, console */
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SRC = join(ROOT, "src", "console");

/** Builds the console into `outDir` (replacing what was there). */
export async function buildConsole(outDir = join(ROOT, "dist", "console")) {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  await build({
    entryPoints: [
      { in: join(SRC, "main.ts"), out: "app" },
      { in: join(SRC, "app.css"), out: "app" },
    ],
    outdir: outDir,
    bundle: true,
    minify: true,
    format: "iife",
    platform: "browser",
    target: ["chrome110", "firefox110", "safari16"],
    legalComments: "none",
    logLevel: "warning",
    tsconfig: join(SRC, "tsconfig.json"),
  });
  // The hosted portal (served at /portal/): its own script and style, from src/console/portal.
  await build({
    entryPoints: [
      { in: join(SRC, "portal", "main.ts"), out: "app" },
      { in: join(SRC, "portal", "portal.css"), out: "app" },
    ],
    outdir: join(outDir, "portal"),
    bundle: true,
    minify: true,
    format: "iife",
    platform: "browser",
    target: ["chrome110", "firefox110", "safari16"],
    legalComments: "none",
    logLevel: "warning",
    tsconfig: join(SRC, "tsconfig.json"),
  });
  copyFileSync(join(SRC, "portal", "index.html"), join(outDir, "portal", "index.html"));
  copyFileSync(join(SRC, "index.html"), join(outDir, "index.html"));
  copyFileSync(join(SRC, "icon.svg"), join(outDir, "icon.svg"));
  return outDir;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const out = await buildConsole(process.argv[2] ? resolve(process.argv[2]) : undefined);
  console.log(`console built into ${out}`);
}
