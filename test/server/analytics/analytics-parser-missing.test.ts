// Fault injected: the optional peer dependency node-sql-parser is not installed. Then
// analytics.getVerifications answers 412 analytics_not_configured saying what to install, and
// verification (which never needs the parser) works as usual.
import { describe, expect, it, vi } from "vitest";
import { silentLogger } from "keyguard";
import { createLocalKeyService } from "keyguard/server";
import request from "supertest";
import type * as PeerModule from "../../../src/server/peer-module";

// The real loadPeer, whose import of node-sql-parser fails as it does when the package is absent.
vi.mock("../../../src/server/peer-module", async (importOriginal) => {
  const actual = await importOriginal<typeof PeerModule>();
  const missing = () => Promise.reject(Object.assign(new Error("Cannot find package 'node-sql-parser'"), { code: "ERR_MODULE_NOT_FOUND" }));
  return {
    ...actual,
    loadPeer: <T>(name: string, neededBy: string, load: () => Promise<unknown>) =>
      actual.loadPeer<T>(name, neededBy, name === "node-sql-parser" ? missing : load),
  };
});

describe("without node-sql-parser", () => {
  it("answers 412 analytics_not_configured naming the package; verification still works", async () => {
    const local = await createLocalKeyService({ logger: silentLogger });
    try {
      const auth = `Bearer ${local.service.rootKey}`;
      const res = await request(local.app)
        .post("/v2/analytics.getVerifications")
        .set("Authorization", auth)
        .send({ query: "SELECT count(*) FROM key_verifications_v1" });
      expect(res.status).toBe(412);
      expect(res.body.error.type).toBe("https://unkey.com/docs/api-reference/errors-v2/svc/data/analytics_not_configured");
      expect(res.body.error.detail).toContain("npm install node-sql-parser");
      const created = await request(local.app).post("/v2/keys.createKey").set("Authorization", auth).send({ apiId: local.service.apiId });
      const verified = await request(local.app).post("/v2/keys.verifyKey").set("Authorization", auth).send({ key: created.body.data.key });
      expect(verified.body.data).toMatchObject({ valid: true, code: "VALID" });
    } finally {
      await local.close();
    }
  });
});
