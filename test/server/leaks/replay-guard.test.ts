// The replay memory of secret scanning reports: a report is taken once within the window, the
// memory stays within its bound (the oldest forgotten first), and a released report is taken again.
import { describe, expect, it } from "vitest";
import { ReplayGuard } from "../../../src/server/leaks/replay-guard";
import { manualClock } from "../helpers";

describe("ReplayGuard", () => {
  it("takes a digest once within the window, again once it passed", () => {
    const clock = manualClock();
    const guard = new ReplayGuard(clock.now, 1000, 10);
    expect(guard.take("a")).toBe(true);
    expect(guard.take("a")).toBe(false);
    clock.advance(999);
    expect(guard.take("a")).toBe(false);
    clock.advance(1);
    expect(guard.take("a")).toBe(true);
  });

  it("remembers at most its capacity, forgetting the oldest first", () => {
    const clock = manualClock();
    const guard = new ReplayGuard(clock.now, 60_000, 3);
    for (const d of ["a", "b", "c", "d"]) {
      clock.advance(1);
      expect(guard.take(d)).toBe(true);
    }
    expect(guard.take("d")).toBe(false);
    expect(guard.take("c")).toBe(false);
    expect(guard.take("a")).toBe(true);
  });

  it("takes a released digest again", () => {
    const guard = new ReplayGuard(() => 0);
    expect(guard.take("x")).toBe(true);
    guard.release("x");
    expect(guard.take("x")).toBe(true);
    expect(guard.take("x")).toBe(false);
  });

  it("digests the raw bytes: a body that differs by one space is another report", () => {
    expect(ReplayGuard.digest(Buffer.from("[]"))).not.toBe(ReplayGuard.digest(Buffer.from("[ ]")));
  });
});
