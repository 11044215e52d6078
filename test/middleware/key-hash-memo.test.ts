// The remembered key hash: always the SHA-256 of the key asked about, whatever came before on the
// connection, one connection's key never serves another connection, and without a connection the
// last RECENT_KEYS keys are remembered.
import { describe, expect, it } from "vitest";
import { rememberedKeyHash, RECENT_KEYS } from "../../src/adapters/key-hash-memo";
import { keyHash } from "../../src/protocol/key-hash";

const memoHash = rememberedKeyHash(keyHash);

describe("rememberedKeyHash(keyHash)", () => {
  it("is the key's SHA-256 for any sequence of keys on one connection", () => {
    const req = { socket: {} };
    for (const key of ["key_a", "key_a", "key_b", "key_a", "key_b", "key_b", "key_a2"]) {
      expect(memoHash(req, key)).toBe(keyHash(key));
    }
  });

  it("keeps connections apart, and hashes without a connection", () => {
    const one = { socket: {} };
    const two = { socket: {} };
    expect(memoHash(one, "key_one")).toBe(keyHash("key_one"));
    expect(memoHash(two, "key_two")).toBe(keyHash("key_two"));
    expect(memoHash(one, "key_two")).toBe(keyHash("key_two"));
    expect(memoHash(two, "key_one")).toBe(keyHash("key_one"));
    expect(memoHash({}, "key_x")).toBe(keyHash("key_x"));
    expect(memoHash({ socket: null }, "key_x")).toBe(keyHash("key_x"));
  });

  it("hashes once per connection and key, and keeps no hash that comes as a promise", async () => {
    let calls = 0;
    const counted = rememberedKeyHash((key: string) => {
      calls++;
      return keyHash(key);
    });
    const conn = { socket: {} };
    counted(conn, "key_a");
    counted(conn, "key_a");
    expect(calls).toBe(1);
    counted(conn, "key_b");
    expect(calls).toBe(2);
    let asyncCalls = 0;
    const later = rememberedKeyHash((key: string) => {
      asyncCalls++;
      return Promise.resolve(keyHash(key));
    });
    expect(await later(conn, "key_a")).toBe(keyHash("key_a"));
    expect(await later(conn, "key_a")).toBe(keyHash("key_a"));
    expect(asyncCalls).toBe(2);
  });

  it("without a connection, hashes a key once while it is among the last RECENT_KEYS, and always answers with its own hash", () => {
    const hashed: string[] = [];
    const counted = rememberedKeyHash((key: string) => {
      hashed.push(key);
      return keyHash(key);
    });
    expect(counted({}, "key_first")).toBe(keyHash("key_first"));
    expect(counted({ socket: null }, "key_first")).toBe(keyHash("key_first"));
    expect(hashed).toEqual(["key_first"]);
    // RECENT_KEYS - 1 more keys: key_first is still remembered.
    for (let i = 1; i < RECENT_KEYS; i++) expect(counted({}, `key_${i}`)).toBe(keyHash(`key_${i}`));
    expect(counted({}, "key_first")).toBe(keyHash("key_first"));
    expect(hashed).toHaveLength(RECENT_KEYS);
    // One more pushes the oldest out: it is hashed again (and remembered anew).
    counted({}, "key_last");
    expect(counted({}, "key_first")).toBe(keyHash("key_first"));
    expect(hashed).toHaveLength(RECENT_KEYS + 2);
    expect(hashed.at(-1)).toBe("key_first");
  });
});
