// Load generation for the benchmarks: bounded autocannon runs on loopback, and the
// alternating-rounds comparison that turns two sides into a median ratio.

import autocannon from "autocannon";

export interface LoadOptions {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  connections?: number;
  /** Seconds per run (bounded). */
  duration?: number;
  /** A fixed number of requests instead of a duration. */
  amount?: number;
  /** Seconds before autocannon gives up on one request. */
  timeout?: number;
  /** URL answering the serving process's `process.cpuUsage()`, to report its CPU time per request. */
  cpuUrl?: string;
  /** A new key per request, sent as `Authorization: Bearer <key>` (many distinct keys, not one repeated). */
  keyPerRequest?: () => string;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  /** CPU time (user + system) the serving process spent per request, µs; when `cpuUrl` was given. */
  cpuPerRequest?: number;
}

const LOOPBACK = /^http:\/\/(127\.\d+\.\d+\.\d+|\[::1\]|localhost)(:\d+)?\//;

export async function load(options: LoadOptions): Promise<LoadResult> {
  if (!LOOPBACK.test(options.url)) throw new Error(`bench: refusing a non-loopback target ${options.url}`);
  const duration = Math.min(options.duration ?? 3, 10);
  const cpuBefore = options.cpuUrl ? await cpuOf(options.cpuUrl) : 0;
  const result = await autocannon({
    url: options.url,
    method: options.method ?? "GET",
    headers: options.headers,
    body: options.body,
    connections: options.connections ?? 10,
    ...(options.amount ? { amount: options.amount } : { duration }),
    timeout: options.timeout ?? 15,
    ...(options.keyPerRequest && {
      requests: [
        {
          setupRequest: (req: autocannon.Request) => ({
            ...req,
            headers: { ...req.headers, authorization: `Bearer ${options.keyPerRequest!()}` },
          }),
        },
      ],
    }),
  });
  const statuses: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = (stat as { count: number }).count;
  const cpuPerRequest = options.cpuUrl ? ((await cpuOf(options.cpuUrl)) - cpuBefore) / Math.max(1, result.requests.total) : undefined;
  return {
    ...(cpuPerRequest === undefined ? {} : { cpuPerRequest }),
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

async function cpuOf(url: string): Promise<number> {
  const usage = (await (await fetch(url)).json()) as { user: number; system: number };
  return usage.user + usage.system;
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Unmeasured load on a side right before each of its measured runs, s (see `rotate`). */
const SETTLE_SECONDS = 0.5;

/**
 * Runs every side once per round for `rounds` rounds (after a 1 s warm-up run of each), the
 * order rotating from round to round so drift on a noisy machine does not favour one side.
 * Each measured run follows half a second of unmeasured load on the same side, so what the side
 * before left behind (garbage to collect, a busier key service) is not counted against it.
 * Returns each side's runs, round by round.
 */
export async function rotate<K extends string>(
  sides: Record<K, LoadOptions>,
  rounds = 3,
  check?: (r: LoadResult) => void,
): Promise<Record<K, LoadResult[]>> {
  const names = Object.keys(sides) as K[];
  for (const name of names) await load({ ...sides[name], duration: 1 });
  const runs = Object.fromEntries(names.map((n) => [n, [] as LoadResult[]])) as Record<K, LoadResult[]>;
  for (let i = 0; i < rounds; i++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(i + j) % names.length]!;
      await load({ ...sides[name], duration: SETTLE_SECONDS, cpuUrl: undefined });
      runs[name].push(await load(sides[name]));
    }
  }
  for (const name of names) for (const r of runs[name]) check?.(r);
  return runs;
}

/** Median over rounds of the throughput ratio a ÷ b (both sides measured in the same rounds). */
export function ratioOf<K extends string>(runs: Record<K, LoadResult[]>, a: K, b: K): number {
  return median(runs[a].map((r, i) => r.rps / runs[b][i]!.rps));
}

/**
 * Median over rounds of the CPU-per-request ratio b ÷ a, oriented like {@link ratioOf}: below 1
 * when `a` spends more CPU per request than `b`. Needs runs with `cpuUrl`.
 */
export function cpuRatioOf<K extends string>(runs: Record<K, LoadResult[]>, a: K, b: K): number {
  return median(runs[a].map((r, i) => (runs[b][i]!.cpuPerRequest ?? NaN) / (r.cpuPerRequest ?? NaN)));
}
