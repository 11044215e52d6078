// IP allow lists, the API's and keyguard's per-key one: addresses and IPv4/IPv6 CIDR ranges; the
// caller's address is the socket's by default, or with `trustProxy` the first non-empty
// X-Forwarded-For entry (as production always reads it). Bad entries are a 400 naming them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalServiceConfigError } from "keyguard/server";
import { clientIp, plainAddress } from "../../../src/server/http/client-ip";
import { parseOptions } from "../../../src/server/options";
import { start, type Started } from "../helpers";

async function verifyFrom(s: Started, key: string, forwardedFor?: string): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${s.rootKey}` };
  if (forwardedFor !== undefined) headers["x-forwarded-for"] = forwardedFor;
  const res = await s.call("keys.verifyKey", { key }, undefined, { headers });
  expect(res.status).toBe(200);
  return res.body.data;
}

describe("without trustProxy (the default)", () => {
  let s: Started;
  beforeAll(async () => {
    s = await start();
  });
  afterAll(() => s.close());

  it("X-Forwarded-For is ignored: the socket address decides", async () => {
    const { apiId } = await s.service.createApi({ name: "office", ipWhitelist: ["203.0.113.7"] });
    const { key } = await s.createKey({ apiId });
    expect(await verifyFrom(s, key, "203.0.113.7")).toMatchObject({ code: "FORBIDDEN" });
    const { apiId: local } = await s.service.createApi({ name: "loopback", ipWhitelist: ["127.0.0.1", "::1"] });
    const { key: localKey } = await s.createKey({ apiId: local });
    expect(await verifyFrom(s, localKey, "203.0.113.7")).toMatchObject({ code: "VALID" });
  });
});

describe("with trustProxy", () => {
  let s: Started;
  let key: string;
  beforeAll(async () => {
    s = await start({ trustProxy: true });
    const { apiId } = await s.service.createApi({ name: "office", ipWhitelist: ["203.0.113.7", "2001:db8::1"] });
    ({ key } = await s.createKey({ apiId }));
  });
  afterAll(() => s.close());

  it("the last X-Forwarded-For entry (the one the proxy added) decides, exact match", async () => {
    expect(await verifyFrom(s, key, "203.0.113.7")).toMatchObject({ code: "VALID" });
    // The entries before it are the caller's own: an allowed address there opens nothing.
    expect(await verifyFrom(s, key, "203.0.113.7, 10.0.0.1")).toMatchObject({ code: "FORBIDDEN" });
    expect(await verifyFrom(s, key, "10.0.0.1, 203.0.113.7")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, " , 203.0.113.7")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, "203.0.113.7:4711")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, "[2001:db8::1]:443")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, "203.0.113.70")).toMatchObject({ code: "FORBIDDEN" });
    // No header: the socket address (loopback) is not on the list.
    expect(await verifyFrom(s, key)).toMatchObject({ code: "FORBIDDEN" });
  });

  it("CIDR ranges, IPv4 and IPv6, on the API's list and on the key's; both must allow", async () => {
    const { apiId } = await s.service.createApi({ name: "ranges", ipWhitelist: ["198.51.100.0/24", "2001:db8::/32"] });
    const { key } = await s.createKey({ apiId });
    expect(await verifyFrom(s, key, "198.51.100.200")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, "2001:db8:ffff::1")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, "[2001:DB8::7]:443")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, "198.51.101.1")).toMatchObject({ code: "FORBIDDEN" });
    expect(await verifyFrom(s, key, "2001:db9::1")).toMatchObject({ code: "FORBIDDEN" });

    // The key's own list narrows the API's: an address must be on both.
    const own = await s.createKey({ apiId, ipWhitelist: ["198.51.100.0/28", "2001:db8:1::/48"] });
    const info = await s.call("keys.getKeySettings", { keyIds: [own.keyId] });
    expect(info.body.data[0].ipWhitelist).toEqual(["198.51.100.0/28", "2001:db8:1::/48"]);
    expect(await verifyFrom(s, own.key, "198.51.100.15")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, own.key, "198.51.100.16")).toMatchObject({ code: "FORBIDDEN" });
    expect(await verifyFrom(s, own.key, "2001:db8:1:2::1")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, own.key, "2001:db8:2::1")).toMatchObject({ code: "FORBIDDEN" });

    // On a key of an API without a list, the key's list alone decides; updateKey changes it, [] clears it.
    const free = await s.createKey({ ipWhitelist: ["203.0.113.9"] });
    expect(await verifyFrom(s, free.key, "203.0.113.9")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, free.key, "203.0.113.8")).toMatchObject({ code: "FORBIDDEN" });
    expect((await s.call("keys.updateKey", { keyId: free.keyId, ipWhitelist: ["203.0.113.0/30"] })).status).toBe(200);
    expect(await verifyFrom(s, free.key, "203.0.113.3")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, free.key, "203.0.113.4")).toMatchObject({ code: "FORBIDDEN" });
    expect((await s.call("keys.updateKey", { keyId: free.keyId, name: "renamed" })).status).toBe(200);
    expect(await verifyFrom(s, free.key, "203.0.113.4")).toMatchObject({ code: "FORBIDDEN" });
    expect((await s.call("keys.updateKey", { keyId: free.keyId, ipWhitelist: [] })).status).toBe(200);
    expect(await verifyFrom(s, free.key, "203.0.113.4")).toMatchObject({ code: "VALID" });
    expect((await s.call("keys.getKeySettings", { keyIds: [free.keyId] })).body.data[0]).not.toHaveProperty("ipWhitelist");
  });

  it("a bad entry is a 400 invalid_input naming the field, the entry and the fix; nothing is created", async () => {
    const bad: Array<[string, RegExp]> = [
      ["10.0.0.0/33", /^has a prefix length that is not 0\.\.32$/],
      ["2001:db8::/129", /not 0\.\.128/],
      ["10.0.0.0/", /prefix length/],
      ["10.0.0.0/8/8", /prefix length/],
      ["localhost", /^is not an IPv4 or IPv6 address or CIDR range$/],
      ["10.0.0.256", /is not an IPv4/],
      [" 10.0.0.1", /is not an IPv4/],
    ];
    for (const [entry, message] of bad) {
      for (const [op, body] of [
        ["keys.createKey", { apiId: s.apiId }],
        ["keys.updateKey", { keyId: (await s.createKey()).keyId }],
        ["apis.updateApi", { apiId: s.apiId }],
      ] as const) {
        const res = await s.call(op, { ...body, ipWhitelist: ["127.0.0.1", entry] });
        expect(res.status, `${op} ${entry}`).toBe(400);
        expect(res.body.error.type).toMatch(/invalid_input/);
        expect(res.body.error.errors[0]).toMatchObject({ location: "body.ipWhitelist[1]", message: expect.stringMatching(message) });
        expect(res.body.error.errors[0].fix).toMatch(/CIDR/);
      }
      await expect(s.service.createApi({ name: "bad", ipWhitelist: [entry] })).rejects.toThrow(
        /ipWhitelist must be an array of addresses or CIDR ranges/,
      );
    }
  });

  it("clientIp and plainAddress normalise as production (no CIDR, ports stripped)", () => {
    expect(clientIp("::ffff:127.0.0.1", undefined, true)).toBe("127.0.0.1");
    expect(clientIp("::1", "198.51.100.2", false)).toBe("::1");
    expect(clientIp("::1", ["", "198.51.100.2, 1.1.1.1"], true)).toBe("1.1.1.1");
    expect(clientIp("::1", ["198.51.100.2", " "], true)).toBe("198.51.100.2");
    expect(clientIp("::1", " ,  ", true)).toBe("::1");
    // The socket's address made plain is remembered for the next request: a new address is made plain again.
    expect(clientIp("::ffff:127.0.0.1", undefined, false)).toBe("127.0.0.1");
    expect(clientIp(undefined, undefined, false)).toBe("");
    expect(clientIp("[::1]:80", undefined, false)).toBe("::1");
    expect(plainAddress("2001:db8::1")).toBe("2001:db8::1");
    expect(plainAddress("[::1]")).toBe("::1");
  });
});

it("trustProxy must be a boolean", () => {
  expect(() => parseOptions({ trustProxy: "yes" as never }, {})).toThrow(LocalServiceConfigError);
  expect(() => parseOptions({ trustProxy: "yes" as never }, {})).toThrow(/trustProxy = "yes"\. Pass true or false/);
  expect(parseOptions({}, {}).trustProxy).toBe(false);
});
