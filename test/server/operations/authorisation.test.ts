// Authorisation declared per operation: every operation of the table declares one, and a root key
// holding no permission is refused by it (403, or the 404 production masks it with) before
// anything changes, while the bootstrap root key gets through with the same request.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALL_OPERATIONS } from "../../../src/server/operations/table";
import { start, type Started } from "../helpers";
import { CASES, makeFixture, type Fixture } from "./operation-cases";

describe("every operation declares its authorisation", () => {
  it("in the table: a permission it names and a check the pipeline runs", () => {
    expect(ALL_OPERATIONS.length).toBeGreaterThanOrEqual(50);
    for (const op of ALL_OPERATIONS) {
      expect(op.authorize.permission, op.name).toMatch(/^[a-z_]+\.(\*|<[^>]+>)\.[a-z_]+/);
      expect(typeof op.authorize.check, op.name).toBe("function");
      expect(typeof op.authorize.reads, op.name).toBe("boolean");
    }
    // Each operation has its case below, and there is no case for an operation that does not exist.
    expect(Object.keys(CASES).sort()).toEqual(ALL_OPERATIONS.map((op) => op.name).sort());
  });
});

describe("a root key without any permission", () => {
  let s: Started;
  let f: Fixture;
  let bare: string;

  beforeAll(async () => {
    s = await start({ webhooksAllowPrivate: true });
    f = await makeFixture(s);
    bare = (await s.service.createRootKey({ permissions: [] })).rootKey;
  });
  afterAll(() => s?.close());

  for (const [op, c] of Object.entries(CASES)) {
    it(`${op}: refused, nothing changed; the bootstrap root key gets through`, async () => {
      const before = await s.service.exportState();
      const res = await s.call(op, c.refusedBody?.(f) ?? c.body(f), bare);
      const refused = c.refused(f);
      expect(res.status).toBe(refused.status);
      if ("data" in refused) {
        expect(res.body.data).toEqual(refused.data);
      } else {
        expect(res.body.error.type).toMatch(new RegExp(`/${refused.kind.replace(".", "/")}$`));
        expect(res.body.error.detail).toBe(refused.detail);
      }
      expect(await s.service.exportState()).toEqual(before);
      const allowed = await s.call(op, c.body(f), c.session?.(f));
      expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
      if (op === "ratelimit.limit") expect(allowed.body.data).toMatchObject({ success: true, remaining: 0 });
      if (op === "ratelimit.multiLimit") expect(allowed.body.data).toMatchObject({ passed: true });
      if (op === "keys.verifyKey") expect(allowed.body.data).toMatchObject({ valid: true });
    });
  }
});
