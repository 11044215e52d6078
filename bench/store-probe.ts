// What the store-level probes (bench/store-sqlite.ts, bench/store-postgres.ts) share: the seeded
// key records and how a series of timings is printed.
import type { KeyRecord } from "../src/server/records";

export const hashOf = (i: number) => `h${i.toString(36).padStart(8, "0")}${"x".repeat(34)}`;
export const idOf = (i: number) => `key_${i.toString(36).padStart(8, "0")}`;

/** Seeded key i: in one of 10 APIs, of one of `identities` identities, every other one with a permission. */
export const probeKey = (i: number, identities: number, credits: number): KeyRecord => ({
  id: idOf(i),
  workspaceId: "ws_bench",
  apiId: `api_${i % 10}`,
  hash: hashOf(i),
  start: "sk_ab",
  byteLength: 16,
  createdAt: 1_700_000_000_000 + i,
  enabled: true,
  identityId: `id_${i % identities}`,
  permissionIds: i % 2 ? ["perm_1"] : [],
  roleIds: [],
  ratelimits: [],
  credits: { remaining: credits, lastRefillAt: 0 },
});

/** p50, p99 and max of `times` (sorted in place), ms. */
export function quantiles(times: number[]): string {
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(3);
  return `p50 ${at(0.5)}  p99 ${at(0.99)}  max ${times[times.length - 1]!.toFixed(3)}`;
}
