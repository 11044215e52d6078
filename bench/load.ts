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

export interface Comparison {
  ratio: number;
  a: LoadResult[];
  b: LoadResult[];
}

/**
 * Runs `a` and `b` alternately for `rounds` rounds (a warm-up run of each first) and returns
 * the median of the per-round throughput ratios a ÷ b.
 */
export async function compare(a: LoadOptions, b: LoadOptions, rounds = 3, check?: (r: LoadResult) => void): Promise<Comparison> {
  await load({ ...a, duration: 1 });
  await load({ ...b, duration: 1 });
  const ra: LoadResult[] = [];
  const rb: LoadResult[] = [];
  for (let i = 0; i < rounds; i++) {
    // Alternate which side goes first so drift on a noisy machine does not favour one side.
    const first = i % 2 === 0;
    const x = await load(first ? a : b);
    const y = await load(first ? b : a);
    ra.push(first ? x : y);
    rb.push(first ? y : x);
  }
  for (const r of [...ra, ...rb]) check?.(r);
  return { ratio: median(ra.map((r, i) => r.rps / rb[i]!.rps)), a: ra, b: rb };
}
