// Where the benchmarks run from, how one starts another as a child process, and the databases
// they use. `npm run bench`
// runs them built (scripts/build-bench.mjs: plain JavaScript in bench/.build/, as keyguard ships);
// `tsx bench/<name>.ts` runs them from source, where tsx keeps every function's name at run time
// (a defineProperty per closure created), a cost the published package does not have.
import { readFileSync, readdirSync } from "node:fs";
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

/**
 * CPU time (user + system) of this machine's processes named `postgres` so far, µs; undefined
 * without a readable /proc (not Linux) or with no such process (PostgreSQL elsewhere).
 */
export function postgresCpuMicros(): number | undefined {
  let ticks = 0;
  let found = false;
  try {
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      } catch {
        continue; // ended meanwhile
      }
      if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) !== "postgres") continue;
      // After the name: state is field 3; utime and stime are fields 14 and 15, cutime and cstime
      // (children waited for: the postmaster's ended backends, so the sum never drops) 16 and 17;
      // clock ticks, 100 a second.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
      found = true;
    }
  } catch {
    return undefined;
  }
  return found ? ticks * 10_000 : undefined;
}
