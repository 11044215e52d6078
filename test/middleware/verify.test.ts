// Unit tests of the verification step with a scripted client (no HTTP): keys whose answers are
// charged (credits, rate limits) are not joined, and a re-verification keeps to the request's deadline.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { KeyServiceClient } from "keyguard/client";
import { silentLogger } from "keyguard";
import { planShape } from "../../src/middleware/request-shape";
import { memoryStore } from "../../src/middleware/cache-store";
import { createVerifier } from "../../src/middleware/verify";
import { keyHash } from "../../src/protocol/key-hash";
import type { VerifyKeyResult } from "../../src/protocol/types";

const SHAPE = planShape({ permissions: undefined, cost: undefined, ratelimits: undefined, tags: undefined }).fixed!;
const H = keyHash("sk_1");
const CHARGED: VerifyKeyResult = { valid: true, code: "VALID", keyId: "key_1", credits: 9 };

/** A client whose verifyKey answers are released by the test, one pending call at a time. */
function scriptedClient() {
  const calls: Array<{ options: { timeout?: number; deadline?: number }; resolve: (r: VerifyKeyResult) => void }> = [];
  const client = {
    keys: {
      verifyKey: (_body: unknown, options: { timeout?: number; deadline?: number }) =>
        new Promise<VerifyKeyResult>((resolve) => calls.push({ options, resolve })),
    },
  } as unknown as KeyServiceClient;
  return { client, calls };
}

function verifierFor(client: KeyServiceClient) {
  return createVerifier({
    client,
    call: { settings: { timeout: 1000, deadline: 2500, retry: null }, options: { timeout: 1000, deadline: 2500, retry: false } },
    cache: { ttl: 30_000, negativeTtl: 5_000 },
    store: memoryStore({ max: 100 }),
    staleIfError: 0,
    staleMax: 10,
    onServiceError: "closed",
    logger: silentLogger,
  });
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(1_700_000_000_000);
});
afterEach(() => {
  vi.useRealTimers();
});

const flush = () => new Promise((r) => setImmediate(r));

describe("charged keys", () => {
  it("a request that joined a call whose answer was charged re-verifies with only its own time left", async () => {
    const { client, calls } = scriptedClient();
    const verifier = verifierFor(client);
    const a = verifier.verify("sk_1", H, SHAPE);
    const b = verifier.verify("sk_1", H, SHAPE);
    await flush();
    expect(calls).toHaveLength(1); // b joined a's call: nothing said yet that the key is charged
    expect(calls[0]!.options.deadline).toBe(2500);

    vi.setSystemTime(Date.now() + 1500);
    calls[0]!.resolve(CHARGED);
    await flush();
    expect(calls).toHaveLength(2); // b verifies on its own...
    expect(calls[1]!.options.deadline).toBe(1000); // ...within what is left of its 2500 ms
    calls[1]!.resolve({ ...CHARGED, credits: 8 });
    expect(await a).toMatchObject({ kind: "result", result: { credits: 9 } });
    expect(await b).toMatchObject({ kind: "result", result: { credits: 8 } });
  });

  it("no time left after the joined call: 503-kind failure (deadline) without another call", async () => {
    const { client, calls } = scriptedClient();
    const verifier = verifierFor(client);
    const a = verifier.verify("sk_1", H, SHAPE);
    const b = verifier.verify("sk_1", H, SHAPE);
    await flush();
    vi.setSystemTime(Date.now() + 2500);
    calls[0]!.resolve(CHARGED);
    await a;
    const outcome = await b;
    expect(calls).toHaveLength(1);
    expect(outcome).toMatchObject({
      kind: "failure",
      failure: { kind: "unavailable", cause: { code: "KEY_SERVICE_TIMEOUT", scope: "deadline" } },
    });
  });

  it("once a key's answer was charged, concurrent requests for it are not joined: each calls at once", async () => {
    const { client, calls } = scriptedClient();
    const verifier = verifierFor(client);
    const first = verifier.verify("sk_1", H, SHAPE);
    await flush();
    calls[0]!.resolve(CHARGED);
    await first;

    const burst = [verifier.verify("sk_1", H, SHAPE), verifier.verify("sk_1", H, SHAPE), verifier.verify("sk_1", H, SHAPE)];
    await flush();
    expect(calls).toHaveLength(4);
    for (const c of calls.slice(1)) {
      expect(c.options.deadline).toBe(2500);
      c.resolve(CHARGED);
    }
    expect((await Promise.all(burst)).every((o) => o.kind === "result")).toBe(true);
  });

  it("a key whose answers become reusable again is shared, then cached, again", async () => {
    const { client, calls } = scriptedClient();
    const verifier = verifierFor(client);
    const PLAIN: VerifyKeyResult = { valid: true, code: "VALID", keyId: "key_1" };
    const first = verifier.verify("sk_1", H, SHAPE);
    await flush();
    calls[0]!.resolve(CHARGED);
    await first;
    const plain = verifier.verify("sk_1", H, SHAPE);
    await flush();
    calls[1]!.resolve(PLAIN);
    await plain;

    const burst = [verifier.verify("sk_1", H, SHAPE), verifier.verify("sk_1", H, SHAPE)];
    await flush();
    expect(calls).toHaveLength(3); // one call for both
    calls[2]!.resolve(PLAIN);
    expect(await Promise.all(burst)).toMatchObject([{ kind: "result" }, { kind: "result" }]);
    expect(verifier.peek(H, SHAPE)).toEqual(PLAIN);
  });
});
