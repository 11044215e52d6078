// API IP allow lists: exact addresses; the caller's address is the socket's by default, or with
// `trustProxy` the first non-empty X-Forwarded-For entry (as production always reads it).
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

  it("the first X-Forwarded-For entry decides, exact match", async () => {
    expect(await verifyFrom(s, key, "203.0.113.7")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, "203.0.113.7, 10.0.0.1")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, " , 203.0.113.7")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, "203.0.113.7:4711")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, "[2001:db8::1]:443")).toMatchObject({ code: "VALID" });
    expect(await verifyFrom(s, key, "10.0.0.1, 203.0.113.7")).toMatchObject({ code: "FORBIDDEN" });
    expect(await verifyFrom(s, key, "203.0.113.70")).toMatchObject({ code: "FORBIDDEN" });
    // No header: the socket address (loopback) is not on the list.
    expect(await verifyFrom(s, key)).toMatchObject({ code: "FORBIDDEN" });
  });

  it("clientIp and plainAddress normalise as production (no CIDR, ports stripped)", () => {
    expect(clientIp("::ffff:127.0.0.1", undefined, true)).toBe("127.0.0.1");
    expect(clientIp("::1", "198.51.100.2", false)).toBe("::1");
    expect(clientIp("::1", ["", "198.51.100.2, 1.1.1.1"], true)).toBe("198.51.100.2");
    expect(clientIp("::1", " ,  ", true)).toBe("::1");
    expect(plainAddress("2001:db8::1")).toBe("2001:db8::1");
    expect(plainAddress("[::1]")).toBe("::1");
  });
});

it("trustProxy must be a boolean", () => {
  expect(() => parseOptions({ trustProxy: "yes" as never }, {})).toThrow(LocalServiceConfigError);
  expect(() => parseOptions({ trustProxy: "yes" as never }, {})).toThrow(/trustProxy = "yes"\. Pass true or false/);
  expect(parseOptions({}, {}).trustProxy).toBe(false);
});
