// Two key services (or a service and the bare node:http server) measured at the same time on the
// same core, each loaded by its own autocannon: whatever else the machine does slows both alike,
// so the ratio of their CPU per verifyKey in each round holds where rounds one after the other
// (bench/run.ts) swing by more than the change being measured. It compares versions of the code.
//
//   npm run bench:side-by-side -- <side A> <side B>
//
// A side is `bare` (a node:http server that parses the JSON body and answers a verify-shaped JSON,
// as the `service` group's), `<dir>` (a checkout of keyguard with a built dist/: the service as
// shipped) or `tsx:<dir>` (its sources through tsx). Prints the median over rounds of B's CPU per
// request ÷ A's. SIDE_ROUNDS (default 8, at most 20) rounds of SIDE_SECONDS (default 3, at most 10),
// after one unmeasured round. On two or more cores the services share core 1, this process core 0.
//
// SIDE_STORE=postgres runs each service over a schema of its own on one PostgreSQL and Redis
// (KEYGUARD_BENCH_POSTGRES_URL, KEYGUARD_BENCH_REDIS_URL, else the local test servers; the schemas
// are dropped at the end), SIDE_STORE=sqlite over a data file of its own in a temporary folder;
// default the memory store. SIDE_OP=createKey loads keys.createKey instead of keys.verifyKey (of
// 300 keys without credits, in turn). A checkout from before 0.3 serves from `keyguard/local`.
//
// SQLite createKey prints a goal when A is from before 0.3 and B is not: B (this version) costs at most A's CPU per request, A being
// 0.2.0 (`git worktree add /tmp/kg-0.2 75f5fa7`), although B writes an audit record 0.2 did not:
//   SIDE_STORE=sqlite SIDE_OP=createKey npm run bench:side-by-side -- /tmp/kg-0.2 .
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import { bareVerifyServer } from "./bare-http";
import { benchScript, BENCH_POSTGRES_URL as POSTGRES, BENCH_REDIS_URL as REDIS } from "./scripts";
import type * as ClientEntry from "../src/client";
import type * as ServerEntry from "../src/server";

type ServerModule = typeof ServerEntry;
type ClientModule = typeof ClientEntry;

interface SideInfo {
  url: string;
  rootKey: string;
  /** The request bodies, sent in turn. */
  bodies: string[];
  cpu: string;
  /** The PostgreSQL schema the side made (SIDE_STORE=postgres). */
  schema?: string;
}

const STORE = process.env.SIDE_STORE ?? "memory";
const OP = process.env.SIDE_OP ?? "verifyKey";
const KEYS = 300;

const listen = (server: http.Server): Promise<string> =>
  new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

/** In the child: serves one side and prints its SideInfo. */
async function serveSide(side: string, dataFile: string | undefined): Promise<void> {
  let info: Omit<SideInfo, "cpu">;
  if (side === "bare") {
    const bare = bareVerifyServer();
    info = { url: `${await listen(bare)}/verify`, rootKey: "unused", bodies: [JSON.stringify({ key: "unused" })] };
  } else {
    const fromSource = side.startsWith("tsx:");
    const dir = fromSource ? side.slice(4) : side;
    const file = (name: string) => `${dir}/${fromSource ? `src/${name}.ts` : `dist/${name}.js`}`;
    const entry = (name: string) => pathToFileURL(file(name)).href;
    // 0.2 served from keyguard/local.
    const { startLocalKeyService } = (await import(entry(existsSync(file("server")) ? "server" : "local"))) as ServerModule;
    const { createClient } = (await import(entry("client"))) as ClientModule;
    const schema = STORE === "postgres" ? `kg_side_${randomBytes(5).toString("hex")}` : undefined;
    const svc = await startLocalKeyService(
      schema !== undefined
        ? { port: 0, postgres: POSTGRES, redis: REDIS, postgresSchema: schema }
        : dataFile !== undefined
          ? { port: 0, dataFile }
          : { port: 0 },
    );
    const client = createClient({ rootKey: svc.rootKey, baseUrl: svc.baseUrl, retry: false });
    const keys: string[] = [];
    for (let i = 0; i < (OP === "verifyKey" ? KEYS : 0); i++) keys.push((await client.keys.createKey({ apiId: svc.apiId })).key);
    info = {
      url: `${svc.baseUrl}/v2/keys.${OP}`,
      rootKey: svc.rootKey,
      bodies: OP === "verifyKey" ? keys.map((key) => JSON.stringify({ key })) : [JSON.stringify({ apiId: svc.apiId })],
      ...(schema !== undefined && { schema }),
    };
  }
  const cpu = http.createServer((_req, res) => {
    const used = process.cpuUsage();
    res.end(String(used.user + used.system));
  });
  console.log(JSON.stringify({ ...info, cpu: await listen(cpu) }));
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const sides = process.argv.slice(2);
  if (sides.length !== 2) throw new Error("bench side-by-side: give two sides: bare, <dir> (built) or tsx:<dir>");
  if (!["memory", "sqlite", "postgres"].includes(STORE)) {
    throw new Error(`bench side-by-side: SIDE_STORE is memory, sqlite or postgres, not ${STORE}`);
  }
  if (OP !== "verifyKey" && OP !== "createKey") throw new Error(`bench side-by-side: SIDE_OP is verifyKey or createKey, not ${OP}`);
  if (sides.includes("bare") && (STORE !== "memory" || OP !== "verifyKey")) {
    throw new Error("bench side-by-side: the bare side answers a verifyKey only, without a store");
  }
  const rounds = Math.min(Number(process.env.SIDE_ROUNDS ?? 8), 20);
  const seconds = Math.min(Number(process.env.SIDE_SECONDS ?? 3), 10);
  const pin = os.cpus().length >= 2 && spawnSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" }).status === 0;
  if (pin) spawnSync("taskset", ["-cp", "0", String(process.pid)], { stdio: "ignore" });
  const children: ChildProcess[] = [];
  const schemas: string[] = [];
  // SIDE_STORE=sqlite: each side's data file, removed at the end.
  const dir = STORE === "sqlite" ? mkdtempSync(join(os.tmpdir(), "keyguard-side-")) : undefined;
  const start = async (side: string): Promise<SideInfo> => {
    const script = benchScript("side-by-side");
    const execArgv = side.startsWith("tsx:") ? ["--import", "tsx"] : script.execArgv;
    const args = [...execArgv, script.file, "child", side, ...(dir === undefined ? [] : [join(dir, `side-${children.length}.db`)])];
    const child = pin
      ? spawn("taskset", ["-c", "1", process.execPath, ...args], { stdio: ["ignore", "pipe", "inherit"] })
      : spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
    children.push(child);
    const [line] = (await Promise.race([
      new Promise((resolve) => createInterface({ input: child.stdout! }).once("line", (l) => resolve([l]))),
      new Promise((_, reject) =>
        child.once("exit", () => reject(new Error(`bench side-by-side: side ${side} exited before it was ready`))),
      ),
    ])) as [string];
    const info = JSON.parse(line) as SideInfo;
    if (info.schema !== undefined) schemas.push(info.schema);
    return info;
  };
  try {
    const [a, b] = [await start(sides[0]!), await start(sides[1]!)];
    const cpuOf = async (s: SideInfo) => Number(await (await fetch(s.cpu)).text());
    const run = (s: SideInfo) =>
      autocannon({
        url: s.url,
        method: "POST",
        connections: 10,
        duration: seconds,
        headers: { "content-type": "application/json", authorization: `Bearer ${s.rootKey}` },
        requests: s.bodies.map((body) => ({ body })),
      });
    const perRequest: { a: number[]; b: number[]; ratio: number[] } = { a: [], b: [], ratio: [] };
    for (let round = 0; round <= rounds; round++) {
      const before = [await cpuOf(a), await cpuOf(b)];
      const [ra, rb] = await Promise.all([run(a), run(b)]);
      const after = [await cpuOf(a), await cpuOf(b)];
      if (ra.non2xx + rb.non2xx + ra.errors + rb.errors > 0) throw new Error("bench side-by-side: a side answered other than 2xx");
      if (round === 0) continue; // warm-up
      const ca = (after[0]! - before[0]!) / ra.requests.total;
      const cb = (after[1]! - before[1]!) / rb.requests.total;
      perRequest.a.push(ca);
      perRequest.b.push(cb);
      perRequest.ratio.push(cb / ca);
    }
    console.log(`${OP} on the ${STORE} store`);
    console.log(`A = ${sides[0]}: ${median(perRequest.a).toFixed(1)} µs of CPU per request (median of ${rounds} rounds of ${seconds} s)`);
    console.log(`B = ${sides[1]}: ${median(perRequest.b).toFixed(1)} µs`);
    const ratio = median(perRequest.ratio);
    console.log(`B ÷ A, CPU per request: ${ratio.toFixed(3)} (rounds: ${perRequest.ratio.map((r) => r.toFixed(2)).join(" ")})`);
    // The goal compares this version (B) with 0.2.0 (A): a checkout from before 0.3 has no dist/server.js.
    const before03 = (side: string) => !side.startsWith("tsx:") && side !== "bare" && !existsSync(join(side, "dist/server.js"));
    if (STORE === "sqlite" && OP === "createKey" && before03(sides[0]!) && !before03(sides[1]!)) {
      console.log(
        `goal: SQLite createKey over HTTP, B's CPU per request at most A's (A: 0.2.0; B writes its audit record) … ${ratio <= 1 ? "met" : "NOT met"} (${ratio.toFixed(2)}; A ÷ B ${(1 / ratio).toFixed(2)})`,
      );
    }
  } finally {
    await Promise.all(
      children.map((child) => (child.exitCode === null ? new Promise((resolve) => child.once("exit", resolve).kill()) : undefined)),
    );
    if (schemas.length > 0) await dropSchemas(schemas);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }
}

/** Drops the schemas the sides made (in Redis they keep nothing: no key of theirs has rate limits). */
async function dropSchemas(schemas: readonly string[]): Promise<void> {
  const sql = new pg.Client({ connectionString: POSTGRES });
  await sql.connect();
  try {
    for (const schema of schemas) await sql.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await sql.end();
  }
}

if (process.argv[2] === "child") await serveSide(process.argv[3]!, process.argv[4]);
else await main();
