// Where the benchmarks run from, how one starts another as a child process, and the databases
// they use. `npm run bench`
// runs them built (scripts/build-bench.mjs: plain JavaScript in bench/.build/, as keyguard ships);
// `tsx bench/<name>.ts` runs them from source, where tsx keeps every function's name at run time
// (a defineProperty per closure created), a cost the published package does not have.
import { basename } from "node:path";
import { fileURLToPath } from "node:url";

/** The PostgreSQL the benchmarks use: KEYGUARD_BENCH_POSTGRES_URL, else the machine's test server. */
export const BENCH_POSTGRES_URL = process.env.KEYGUARD_BENCH_POSTGRES_URL || "postgres://postgres@127.0.0.1:5432/test";
/** The Redis the benchmarks use: KEYGUARD_BENCH_REDIS_URL, else the machine's test server. */
export const BENCH_REDIS_URL = process.env.KEYGUARD_BENCH_REDIS_URL || "redis://127.0.0.1:6379/0";

/** Whether this runs from bench/.build/ (built), not from the TypeScript sources. */
export const BUILT = import.meta.url.endsWith(".mjs");

/** The bench folder, which holds results/, either way. */
export const BENCH_DIR = fileURLToPath(new URL(BUILT ? "../" : "./", import.meta.url));

/** The file of the bench script `name` (e.g. "servers") and the Node flags it needs to run. */
export function benchScript(name: string): { file: string; execArgv: string[] } {
  return BUILT
    ? { file: fileURLToPath(new URL(`./${name}.mjs`, import.meta.url)), execArgv: [] }
    : { file: `${BENCH_DIR}${name}.ts`, execArgv: ["--import", "tsx"] };
}

/** The line a report starts with when the numbers were taken from source (tsx), not from the built form. */
export const FROM_SOURCE_NOTE = BUILT
  ? undefined
  : "bench: running from TypeScript through tsx, which names every closure at run time: `npm run bench` measures the built form";

/** Whether the bench script `name` is the one Node was started with (built or from source), not imported by another. */
export function isMainScript(name: string): boolean {
  const main = process.argv[1];
  return main !== undefined && (basename(main) === `${name}.mjs` || basename(main) === `${name}.ts`);
}
