// Builds the benchmarks into bench/.build/ as plain JavaScript, the way keyguard itself is built
// (esbuild, no names kept), so that `npm run bench` measures the code as it ships. Run straight from
// TypeScript through tsx, every function expression the service creates while it answers is also
// given its name at run time (tsx compiles with esbuild's keepNames: one defineProperty per closure),
// a cost the published package does not have.
// keyguard's own modules (`keyguard/*`, through tsconfig's paths, and ../src) are bundled in;
// packages stay imports. The SQLite store's workers are copied next to the bundles, where the
// store looks for them.
import { copyFileSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { fileURLToPath, URL } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const out = `${root}bench/.build`;
const pkg = JSON.parse(readFileSync(`${root}package.json`, "utf8"));
const packages = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies, ...pkg.peerDependencies, ...pkg.optionalDependencies });

rmSync(out, { recursive: true, force: true });
await build({
  entryPoints: readdirSync(`${root}bench`)
    .filter((f) => f.endsWith(".ts"))
    .map((f) => `${root}bench/${f}`),
  outdir: out,
  outExtension: { ".js": ".mjs" },
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  tsconfig: `${root}tsconfig.json`,
  // The profile of the service's steps (bench/step-profile.ts) finds each frame's source file through them.
  sourcemap: true,
  // A package's subpaths (express/…, @opentelemetry/…) stay imports too.
  external: packages.flatMap((p) => [p, `${p}/*`]),
  logLevel: "warning",
});
for (const worker of ["sqlite-checkpoint-worker.js", "sqlite-analytics-worker.js"]) {
  copyFileSync(`${root}src/server/storage/sqlite/${worker}`, `${out}/${worker}`);
}
