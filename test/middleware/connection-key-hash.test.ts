// The per-connection key hash: always the SHA-256 of the key asked about, whatever came before on
// the connection, and one connection's key never serves another connection.
import { describe, expect, it } from "vitest";
import { connectionKeyHash } from "../../src/adapters/connection-key-hash";
import { keyHash } from "../../src/protocol/key-hash";

describe("connectionKeyHash", () => {
  it("is the key's SHA-256 for any sequence of keys on one connection", () => {
    const req = { socket: {} };
    for (const key of ["key_a", "key_a", "key_b", "key_a", "key_b", "key_b", "key_a2"]) {
      expect(connectionKeyHash(req, key)).toBe(keyHash(key));
    }
  });

  it("keeps connections apart, and hashes without a connection", () => {
    const one = { socket: {} };
    const two = { socket: {} };
    expect(connectionKeyHash(one, "key_one")).toBe(keyHash("key_one"));
    expect(connectionKeyHash(two, "key_two")).toBe(keyHash("key_two"));
    expect(connectionKeyHash(one, "key_two")).toBe(keyHash("key_two"));
    expect(connectionKeyHash(two, "key_one")).toBe(keyHash("key_one"));
    expect(connectionKeyHash({}, "key_x")).toBe(keyHash("key_x"));
    expect(connectionKeyHash({ socket: null }, "key_x")).toBe(keyHash("key_x"));
  });
});
