// Instructions per request, counted by valgrind's callgrind: the local key service's verifyKey
// (memory store) against the bare node:http server the service group of `npm run bench` compares
// it with (bench/bare-http.ts), both in one service process as there (bench/servers.ts).
//
// A count does not move with the machine's load: where the CPU-time ratio of `npm run bench`
// spreads by 0.2 between rounds on a shared machine, this one repeats. Node runs with V8's
// `--predictable`, which does its garbage collection and compiling on the main thread: without
// it, the same bare server counted 79,000 and 102,000 instructions per request in two runs. It
// counts user space only. Both sides make the same socket calls per request (one read, one
// writev: count them with `strace -c -f`), but the service's loop waits more often, so the
// CPU-time ratio can lie on either side of this one.
//
// Each side gets INSTRUCTIONS_WARM requests first (default 10,000, in turns: the optimizing
// compiler has then done its work), then INSTRUCTIONS_ROUNDS rounds (default 4) of
// INSTRUCTIONS_REQUESTS (default 5,000) counted, the sides alternating; the ratio is of all the
// rounds' counts. One request at a time on one keep-alive connection, so both sides take the same
// path every time. The counts grow with the process's age: the memory store keeps every
// verification event, and the collector's work grows with them (after 20,000 requests of warm-up
// per side both sides counted about 1.6 times as many), so only runs of the same settings compare.
// About 4 minutes; needs valgrind (`apt-get install valgrind`). Saves
// bench/results/instructions.json (default settings only).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createClient } from "keyguard/client";
import type { ServiceInfo } from "./servers";
import { BENCH_DIR, benchScript } from "./scripts";

const WARM = Number(process.env.INSTRUCTIONS_WARM ?? 10_000);
const REQUESTS = Number(process.env.INSTRUCTIONS_REQUESTS ?? 5_000);
const ROUNDS = Number(process.env.INSTRUCTIONS_ROUNDS ?? 4);
const GOAL = 0.6;

type Side = "service" | "bare";

/** One request at a time on one keep-alive connection; rejects on anything but a 200. */
function poster(info: ServiceInfo, key: string): Record<Side, () => Promise<void>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ key });
  const post = (url: string, headers: Record<string, string>) => () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        url,
        { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers } },
        (res) => {
          res.resume();
          res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`bench: ${url} answered ${res.statusCode}`))));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  return {
    service: post(`${info.baseUrl}/v2/keys.verifyKey`, { authorization: `Bearer ${info.rootKey}` }),
    bare: post(`${info.bareHttpUrl}/verify`, {}),
  };
}

async function main(): Promise<void> {
  if (spawnSync("valgrind", ["--version"]).status !== 0) {
    console.error("bench: valgrind is not installed (apt-get install valgrind): no instructions counted");
    process.exitCode = 1;
    return;
  }
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), "keyguard-bench-instructions-"));
  const script = benchScript("servers");
  const child = spawn(
    "valgrind",
    [
      "--tool=callgrind",
      // V8 writes and rewrites its machine code: valgrind must see every change.
      "--smc-check=all-non-file",
      `--callgrind-out-file=${dir}/callgrind.out`,
      `--log-file=${dir}/valgrind.log`,
      process.execPath,
      // V8 without its helper threads and time-driven choices: the same work from run to run.
      "--predictable",
      ...script.execArgv,
      script.file,
      "service",
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  try {
    const lines = createInterface({ input: child.stdout! });
    const [line] = (await Promise.race([
      once(lines, "line"),
      once(child, "exit").then(() => {
        throw new Error(`bench: the service under valgrind exited before it was ready (${dir}/valgrind.log)`);
      }),
    ])) as [string];
    const info = JSON.parse(line) as ServiceInfo;
    const { key } = await createClient({ rootKey: info.rootKey, baseUrl: info.baseUrl, retry: false }).keys.createKey({
      apiId: info.apiId,
    });
    const send = poster(info, key);
    const control = (arg: string) => execFileSync("callgrind_control", [arg, String(child.pid)], { stdio: "ignore" });
    let dumps = 0;
    /** The instructions of every thread since the counters were last zeroed, from the newest dump. */
    const dumped = (): number => {
      control("-d");
      dumps += 1;
      const summary = /^summary: (\d+)$/m.exec(readFileSync(join(dir, `callgrind.out.${dumps}`), "utf8"));
      if (!summary) throw new Error(`bench: callgrind dump ${dumps} in ${dir} has no summary line`);
      return Number(summary[1]);
    };
    // Warm-up in turns of a thousand: a side left idle through many collections has its
    // compiled code dropped, and would compile again inside its first counted round.
    for (let done = 0; done < WARM; done += 1000) {
      for (const side of ["service", "bare"] as const) for (let i = 0; i < Math.min(1000, WARM - done); i++) await send[side]();
    }
    const rounds: Array<Record<Side, number>> = [];
    for (let r = 0; r < ROUNDS; r++) {
      const round = { service: 0, bare: 0 };
      for (const side of r % 2 === 0 ? (["service", "bare"] as const) : (["bare", "service"] as const)) {
        control("-z");
        for (let i = 0; i < REQUESTS; i++) await send[side]();
        round[side] = Math.round(dumped() / REQUESTS);
      }
      rounds.push(round);
      console.log(
        `round ${r + 1}: service verifyKey ${round.service.toLocaleString("en")} instructions per request, ` +
          `bare node:http ${round.bare.toLocaleString("en")}; ratio ${(round.bare / round.service).toFixed(3)}`,
      );
    }
    // Every round's count, not a typical round's: a major collection falls in one round of a few
    // and adds half as much again to it, and it is the service's cost as much as its code is.
    const sum = (side: Side) => rounds.reduce((total, r) => total + r[side], 0);
    const ratio = sum("bare") / sum("service");
    console.log(
      `all rounds: service verifyKey ${Math.round(sum("service") / ROUNDS).toLocaleString("en")} instructions per request, ` +
        `bare node:http ${Math.round(sum("bare") / ROUNDS).toLocaleString("en")}`,
    );
    const minutes = (Date.now() - started) / 60_000;
    console.log(
      `${ratio >= GOAL ? "met    " : "NOT MET"} service verifyKey ≥ ${GOAL}× a bare node:http server by user-space instructions ` +
        `(every thread; the goal is judged by CPU time, which adds the kernel's work): ${ratio.toFixed(3)}`,
    );
    console.log(
      `took ${minutes.toFixed(1)} min (${WARM.toLocaleString("en")} requests of warm-up per side, ${ROUNDS} rounds of ${REQUESTS.toLocaleString("en")})`,
    );
    if (process.env.INSTRUCTIONS_WARM || process.env.INSTRUCTIONS_REQUESTS || process.env.INSTRUCTIONS_ROUNDS) {
      console.log("a narrowed run: bench/results/instructions.json left as it was");
      return;
    }
    writeFileSync(
      join(BENCH_DIR, "results", "instructions.json"),
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          machine: `${cpus()[0]?.model.trim() ?? "?"}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
          settings: { warm: WARM, requests: REQUESTS, rounds: ROUNDS },
          rounds,
          ratio: Math.round(ratio * 1000) / 1000,
          met: ratio >= GOAL,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit");
      child.kill("SIGKILL");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
