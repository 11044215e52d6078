// Two PostgreSQL drivers side by side on the statements of a createKey (#34: "pick by side-by-side
// measurement"): `pg`, the store's driver, as the store sends them (one at a time, prepared, BEGIN
// and COMMIT each a round trip), and `postgres` (porsager), which pipelines: its transaction sends
// BEGIN with the first statement, and statements issued together leave together. Same tables, same
// PostgreSQL, 8 transactions in flight, alternating rounds; the figure is this process's CPU per
// transaction (the driver's side; PostgreSQL's own is the same statements either way) and the
// throughput. Needs PostgreSQL (KEYGUARD_BENCH_POSTGRES_URL, else the test server).
// Run: node scripts/build-bench.mjs && node bench/.build/pg-drivers.mjs
import { randomBytes } from "node:crypto";
import pg from "pg";
import postgres from "postgres";
import { BENCH_POSTGRES_URL as URL_ } from "./scripts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SECONDS = Number(process.env.BENCH_DURATION ?? 3);
const IN_FLIGHT = 8;
const schema = `kg_drivers_${randomBytes(4).toString("hex")}`;
const S = `"${schema}"`;

const API = "api_bench";
const WS = "ws_bench";
// The statements' shapes as the PostgreSQL store sends them for a createKey (simplified tables).
const READ_API = `SELECT r.id, r.data FROM ${S}.apis r WHERE r.id = $1 FOR SHARE`;
const INSERT_KEY = `INSERT INTO ${S}.keys (id, workspace_id, hash, data) VALUES ($1, $2, $3, $4::jsonb)`;
const APPEND_AUDIT = `WITH c AS (
    INSERT INTO ${S}.audit_chain AS c (workspace_id, seq, hash, prev_hash) VALUES ($2, 1, encode(sha256(convert_to($4::text || '1', 'UTF8')), 'hex'), '')
    ON CONFLICT (workspace_id) DO UPDATE SET seq = c.seq + 1, prev_hash = c.hash, hash = encode(sha256(convert_to($4::text || c.hash, 'UTF8')), 'hex')
    RETURNING seq, prev_hash, hash)
  INSERT INTO ${S}.audit_events (id, workspace_id, chain_seq, data) SELECT $1, $2, c.seq, $3::jsonb || jsonb_build_object('seq', c.seq) FROM c`;

const keyData = (id: string) =>
  JSON.stringify({ id, name: "bench", createdAt: Date.now(), permissionIds: [], roleIds: [], ratelimits: [] });
const auditData = (id: string) => JSON.stringify({ id, operation: "keys.createKey", targets: [id, API], outcome: "success" });
const ids = () => {
  const id = `key_${randomBytes(8).toString("hex")}`;
  return { id, hash: randomBytes(16).toString("hex"), audit: `aud_${randomBytes(8).toString("hex")}` };
};

const setupClient = new pg.Client({ connectionString: URL_ });
await setupClient.connect();
await setupClient.query(`CREATE SCHEMA ${S}`);
await setupClient.query(`CREATE TABLE ${S}.apis (id text PRIMARY KEY, data jsonb NOT NULL)`);
await setupClient.query(
  `CREATE TABLE ${S}.keys (id text PRIMARY KEY, workspace_id text NOT NULL, hash text UNIQUE NOT NULL, data jsonb NOT NULL)`,
);
await setupClient.query(
  `CREATE TABLE ${S}.audit_chain (workspace_id text PRIMARY KEY, seq bigint NOT NULL, hash text NOT NULL, prev_hash text)`,
);
await setupClient.query(
  `CREATE TABLE ${S}.audit_events (id text PRIMARY KEY, workspace_id text NOT NULL, chain_seq bigint, data jsonb NOT NULL)`,
);
await setupClient.query(`INSERT INTO ${S}.apis VALUES ($1, '{"name":"bench"}')`, [API]);

const pool = new pg.Pool({ connectionString: URL_, max: IN_FLIGHT });
const sql = postgres(URL_, { max: IN_FLIGHT, onnotice: () => undefined });

type Side = { name: string; tx: () => Promise<void> };
const sides: Side[] = [
  {
    name: "pg, one statement at a time (the store today)",
    async tx() {
      const k = ids();
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await client.query({ name: "read_api", text: READ_API, values: [API] });
        await client.query({ name: "insert_key", text: INSERT_KEY, values: [k.id, WS, k.hash, keyData(k.id)] });
        await client.query({ name: "append_audit", text: APPEND_AUDIT, values: [k.audit, WS, auditData(k.id), k.id] });
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK");
        throw err;
      } finally {
        client.release();
      }
    },
  },
  {
    name: "postgres, one statement at a time (BEGIN pipelined)",
    async tx() {
      const k = ids();
      await sql.begin(async (t) => {
        await t.unsafe(READ_API, [API], { prepare: true });
        await t.unsafe(INSERT_KEY, [k.id, WS, k.hash, keyData(k.id)], { prepare: true });
        await t.unsafe(APPEND_AUDIT, [k.audit, WS, auditData(k.id), k.id], { prepare: true });
      });
    },
  },
  {
    name: "postgres, the two writes pipelined too",
    async tx() {
      const k = ids();
      await sql.begin(async (t) => {
        await t.unsafe(READ_API, [API], { prepare: true });
        await Promise.all([
          t.unsafe(INSERT_KEY, [k.id, WS, k.hash, keyData(k.id)], { prepare: true }),
          t.unsafe(APPEND_AUDIT, [k.audit, WS, auditData(k.id), k.id], { prepare: true }),
        ]);
      });
    },
  },
];

/** One round of `side`: transactions per second and this process's CPU µs per transaction. */
async function round(side: Side, ms: number): Promise<{ perSecond: number; cpuUs: number }> {
  let n = 0;
  const end = performance.now() + ms;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < end) {
        await side.tx();
        n++;
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { perSecond: (n * 1000) / (performance.now() - t0), cpuUs: (cpu.user + cpu.system) / n };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  console.log(`createKey's statements, ${IN_FLIGHT} transactions in flight, ${ROUNDS} alternating rounds of ${SECONDS} s per side`);
  for (const side of sides) await round(side, 1000); // warm-up: connections, prepared statements, JIT
  const results = sides.map(() => ({ perSecond: [] as number[], cpuUs: [] as number[] }));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [i, side] of sides.entries()) {
      const out = await round(side, SECONDS * 1000);
      results[i]!.perSecond.push(out.perSecond);
      results[i]!.cpuUs.push(out.cpuUs);
    }
  }
  const base = median(results[0]!.cpuUs);
  console.log("| driver | transactions/s | client CPU µs per transaction | CPU ÷ pg's |");
  console.log("|---|---|---|---|");
  for (const [i, side] of sides.entries()) {
    const cpu = median(results[i]!.cpuUs);
    console.log(
      `| ${side.name} | ${median(results[i]!.perSecond).toFixed(0)} | ${cpu.toFixed(0)} (rounds ${Math.min(...results[i]!.cpuUs).toFixed(0)}–${Math.max(...results[i]!.cpuUs).toFixed(0)}) | ${(cpu / base).toFixed(2)} |`,
    );
  }
} finally {
  await sql.end();
  await pool.end();
  await setupClient.query(`DROP SCHEMA ${S} CASCADE`);
  await setupClient.end();
}
