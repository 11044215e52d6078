// The audit log covers the operation table: each operation of the table is called (refused with a
// root key holding no permission, then allowed with the bootstrap root key), and the state is
// compared before and after. A call that changed the state is of an operation declaring it changes
// state and wrote exactly one record of its own, a read-only call wrote none, and every refusal
// wrote one "refused" record.
import { isDeepStrictEqual } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyHash } from "../../../src/protocol/key-hash";
import { findOperation } from "../../../src/server/operations/table";
import { start, type Started } from "../helpers";
import { CASES, makeFixture, type Fixture } from "./operation-cases";

describe("every operation of the table and the audit log", () => {
  let s: Started;
  let f: Fixture;
  let bare: string;
  let ids: { bootstrap: string; bare: string };
  let newest: string | undefined;
  /** Every secret the service handed out so far: no record may hold one. */
  const secrets: string[] = [];

  /** The records written since the last call, oldest first. */
  async function written(): Promise<Array<Record<string, unknown>>> {
    const res = await s.call("audit.listEvents", { limit: 100 });
    expect(res.status).toBe(200);
    const records = res.body.data as Array<{ id: string }>;
    const fresh = records.filter((r) => newest === undefined || r.id > newest);
    if (records.length > 0) newest = records[0]!.id;
    return fresh.reverse();
  }

  beforeAll(async () => {
    s = await start({ webhooksAllowPrivate: true });
    f = await makeFixture(s);
    bare = (await s.service.createRootKey({ permissions: [] })).rootKey;
    const roots = Object.values((await s.service.exportState()).rootKeys);
    ids = {
      bootstrap: roots.find((r) => r.hash === keyHash(s.rootKey))!.id,
      bare: roots.find((r) => r.hash === keyHash(bare))!.id,
    };
    secrets.push(s.rootKey, bare, f.key);
    await written();
  });
  afterAll(() => s?.close());

  for (const [op, c] of Object.entries(CASES)) {
    it(`${op}: one record per change and per refusal, none for a read`, async () => {
      const refused = await s.call(op, c.refusedBody?.(f) ?? c.body(f), bare);
      const afterRefusal = await written();
      // A portal code that is none is not a root key's refusal: the caller is unknown.
      if (refused.status === 200 || refused.status === 401) {
        expect(afterRefusal).toEqual([]);
      } else {
        expect(afterRefusal).toHaveLength(1);
        expect(afterRefusal[0]).toMatchObject({
          operation: op,
          outcome: "refused",
          actorId: ids.bare,
          requestId: refused.body.meta.requestId,
        });
        expect(afterRefusal[0]!.change).toMatchObject({ status: refused.status, detail: refused.body.error.detail });
      }

      const before = await s.service.exportState();
      const allowed = await s.call(op, c.body(f), c.session?.(f));
      expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
      const after = await s.service.exportState();
      if (typeof allowed.body.data?.key === "string") secrets.push(allowed.body.data.key);
      const changed = !isDeepStrictEqual(before, after);
      const declared = findOperation(op)!.audit !== undefined;
      const records = await written();
      // A call that changed the state is of an operation that declares it changes state; such an
      // operation writes one record per successful call (a change to the same values included).
      if (changed) expect(declared, `${op} changed the state: it must declare audit`).toBe(true);
      if (declared) {
        expect(records, `${op} changes state`).toHaveLength(1);
        expect(records[0]).toMatchObject({
          operation: op,
          outcome: "success",
          actorId: c.session ? expect.stringMatching(/^ps_/) : ids.bootstrap,
          requestId: allowed.body.meta.requestId,
        });
        expect((records[0]!.targets as string[]).length).toBeGreaterThan(0);
      } else {
        expect(records, `${op} is read-only`).toEqual([]);
      }

      const text = JSON.stringify([...afterRefusal, ...records]);
      for (const secret of secrets) expect(text).not.toContain(secret);
      for (const k of Object.values(after.keys)) expect(text).not.toContain(k.hash);
    });
  }
});
