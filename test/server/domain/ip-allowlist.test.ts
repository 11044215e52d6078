// Whether an allow-list entry lies inside another list (a root key's fence): every address the
// entry allows must be allowed by one entry of the list.
import { describe, expect, it } from "vitest";
import { allowsAddress, entryWithin } from "../../../src/server/domain/ip-allowlist";

describe("entryWithin", () => {
  it("holds an address inside a range or the same address, however it is written", () => {
    expect(entryWithin("10.0.4.7", ["10.0.4.0/24"])).toBe(true);
    expect(entryWithin("10.0.4.7", ["10.0.4.7"])).toBe(true);
    expect(entryWithin("10.0.5.7", ["10.0.4.0/24"])).toBe(false);
    expect(entryWithin("10.0.4.8", ["10.0.4.7"])).toBe(false);
    expect(entryWithin("2001:db8::1", ["2001:0db8:0:0:0:0:0:0001"])).toBe(true);
    expect(entryWithin("2001:db8:ffff::1", ["2001:db8::/32"])).toBe(true);
    expect(entryWithin("2001:db9::1", ["2001:db8::/32"])).toBe(false);
    expect(entryWithin("::ffff:10.0.4.7", ["::ffff:10.0.4.0/120"])).toBe(true);
  });

  it("holds a range only inside a range of its family at most as long, and in one entry", () => {
    expect(entryWithin("10.0.4.0/24", ["10.0.0.0/16"])).toBe(true);
    expect(entryWithin("10.0.4.128/25", ["10.0.4.0/24"])).toBe(true);
    expect(entryWithin("10.0.4.0/24", ["10.0.4.0/24"])).toBe(true);
    expect(entryWithin("10.0.0.0/8", ["10.0.0.0/16"])).toBe(false);
    expect(entryWithin("10.0.4.0/24", ["10.0.4.7"])).toBe(false);
    expect(entryWithin("10.0.4.7/32", ["10.0.4.7"])).toBe(true);
    // Two halves of the range are two entries: the whole is inside neither.
    expect(entryWithin("10.0.4.0/24", ["10.0.4.0/25", "10.0.4.128/25"])).toBe(false);
    expect(entryWithin("0.0.0.0/0", ["10.0.0.0/8"])).toBe(false);
    expect(entryWithin("2001:db8:1::/48", ["2001:db8::/32"])).toBe(true);
    expect(entryWithin("2001:db8::/31", ["2001:db8::/32"])).toBe(false);
    expect(entryWithin("::/0", ["0.0.0.0/0"])).toBe(false);
    expect(entryWithin("10.0.4.7", ["::/0"])).toBe(false);
    expect(entryWithin("::ffff:10.0.4.7", ["10.0.0.0/8"])).toBe(false);
  });

  it("holds nothing inside an empty list, and no entry that is not an address or range", () => {
    expect(entryWithin("10.0.4.7", [])).toBe(false);
    expect(entryWithin("nonsense", ["0.0.0.0/0"])).toBe(false);
    expect(entryWithin("10.0.4.0/33", ["0.0.0.0/0"])).toBe(false);
  });

  it("agrees with allowsAddress: an address of an entry inside the list is allowed by it", () => {
    const fence = ["10.0.0.0/16", "2001:db8::/32", "192.0.2.9"];
    for (const [entry, probe] of [
      ["10.0.200.0/24", "10.0.200.255"],
      ["2001:db8:aa::/64", "2001:db8:aa::ffff"],
      ["192.0.2.9", "192.0.2.9"],
    ] as const) {
      expect(entryWithin(entry, fence)).toBe(true);
      expect(allowsAddress(fence, probe)).toBe(true);
    }
  });
});
