// Concurrent verifications over real HTTP: credits and rate limits never over-admit.
import { afterAll, beforeAll, expect, it } from "vitest";
import { manualClock, start, type Started } from "../helpers";

let s: Started;
const clock = manualClock();
beforeAll(async () => {
  s = await start({ now: clock.now });
});
afterAll(() => s.close());

function tally(results: Array<Record<string, unknown>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) out[r.code as string] = (out[r.code as string] ?? 0) + 1;
  return out;
}

it("100 concurrent verifications of a key with 40 credits: exactly 40 VALID, 60 USAGE_EXCEEDED, 0 left", async () => {
  const { keyId, key } = await s.createKey({ credits: { remaining: 40 } });
  const results = await Promise.all(Array.from({ length: 100 }, () => s.verify(key)));
  expect(tally(results)).toEqual({ VALID: 40, USAGE_EXCEEDED: 60 });
  const info = await s.call("keys.getKey", { keyId });
  expect(info.body.data.credits).toEqual({ remaining: 0 });
});

it("a key limited to 10 per minute lets exactly 10 of 100 concurrent verifications through", async () => {
  const { key } = await s.createKey({ ratelimits: [{ name: "per-minute", limit: 10, duration: 60_000, autoApply: true }] });
  const results = await Promise.all(Array.from({ length: 100 }, () => s.verify(key)));
  expect(tally(results)).toEqual({ VALID: 10, RATE_LIMITED: 90 });
});

it("ratelimit.limit under concurrency admits exactly `limit`", async () => {
  const body = { namespace: "api", identifier: "user_1", limit: 7, duration: 60_000 };
  const results = await Promise.all(Array.from({ length: 50 }, () => s.call("ratelimit.limit", body)));
  expect(results.filter((r) => r.body.data.success).length).toBe(7);
});

it("credits spent concurrently with writes of the same key: exactly the balance is spent, none comes back", async () => {
  const { keyId, key } = await s.createKey({ credits: { remaining: 25 } });
  // updateKey and updateCredits (increment 0) read the key and write it back in a transaction
  // while verifications spend its credits.
  const writes = Array.from({ length: 10 }, (_, i) =>
    i % 2 ? s.call("keys.updateKey", { keyId, name: `n${i}` }) : s.call("keys.updateCredits", { keyId, operation: "increment", value: 0 }),
  );
  const [results, written] = await Promise.all([Promise.all(Array.from({ length: 60 }, () => s.verify(key))), Promise.all(writes)]);
  expect(written.map((w) => w.status)).toEqual(Array(10).fill(200));
  expect(tally(results)).toEqual({ VALID: 25, USAGE_EXCEEDED: 35 });
  expect((await s.call("keys.getKey", { keyId })).body.data.credits).toEqual({ remaining: 0 });
});

it("concurrent creations of one name: exactly one succeeds, and concurrent keys share one identity", async () => {
  const perms = await Promise.all(
    Array.from({ length: 10 }, () => s.call("permissions.createPermission", { name: "race.read", slug: "race.read" })),
  );
  expect(perms.map((r) => r.status).sort()).toEqual([200, ...Array(9).fill(409)]);
  const roles = await Promise.all(Array.from({ length: 10 }, () => s.call("permissions.createRole", { name: "racer" })));
  expect(roles.filter((r) => r.status === 200)).toHaveLength(1);
  const identities = await Promise.all(Array.from({ length: 10 }, () => s.call("identities.createIdentity", { externalId: "racer" })));
  expect(identities.filter((r) => r.status === 200)).toHaveLength(1);
  // createKey upserts the identity of an externalId: keys created together get the same one.
  const keys = await Promise.all(Array.from({ length: 10 }, () => s.createKey({ externalId: "race-user", permissions: ["race.new"] })));
  const verified = await Promise.all(keys.map((k) => s.verify(k.key)));
  expect(new Set(verified.map((v) => (v.identity as { id: string }).id)).size).toBe(1);
  const listed = await s.call("permissions.listPermissions", { search: "race.new" });
  expect(listed.body.data).toHaveLength(1);
});
