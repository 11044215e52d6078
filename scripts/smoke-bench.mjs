// Smoke test of the BUILT benchmarks (what `npm run bench` runs): builds bench/.build/, runs the
// `service` group once for a second per side, and checks that its child process started from the
// build, that keyguard's code in it was not compiled with names kept, and that the profile of the
// service's steps found keyguard's source files through the bundles' source maps.
// node scripts/smoke-bench.mjs
/* global process, console */
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const BUILD = join(ROOT, "bench", ".build");

execFileSync(process.execPath, [join(ROOT, "scripts", "build-bench.mjs")], { stdio: "inherit" });
const kept = readdirSync(BUILD).filter((f) => f.endsWith(".mjs") && readFileSync(join(BUILD, f), "utf8").includes("__name("));
if (kept.length > 0) throw new Error(`bench build: names kept at run time in ${kept.join(", ")}`);

const env = { ...process.env, BENCH_ONLY: "service", BENCH_ROUNDS: "1", BENCH_DURATION: "1" };
const run = spawnSync(process.execPath, [join(BUILD, "run.mjs")], { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
process.stderr.write(run.stderr);
if (run.status !== 0) throw new Error(`bench build: run.mjs exited with ${run.status}`);
if (`${run.stdout}${run.stderr}`.includes("running from TypeScript")) throw new Error("bench build: run.mjs says it runs from source");
const results = JSON.parse(readFileSync(join(ROOT, "bench", "results", "partial.json"), "utf8"));
const steps = Object.fromEntries(results.serviceSteps.steps.map((s) => [s.step, s.micros]));
for (const step of ["reading the body", "authentication", "the operation (store included)", "serialisation and sending"]) {
  if (!(steps[step] > 0)) throw new Error(`bench build: the profile found no time in "${step}" (${JSON.stringify(steps)})`);
}
console.log(`bench build smoke: the service group ran built; steps found: ${JSON.stringify(steps)}`);
