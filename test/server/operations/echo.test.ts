// A key or root key sent in the wrong field never comes back: not in an error body, not in a log
// line. No caller's value is quoted, ids and names included: a message names the field, the
// length and the kind (secrets-in-errors.test.ts sends secrets in every field of every operation).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start, type Started } from "../helpers";

const lines: string[] = [];
const logger = {
  warn: (fields: unknown, msg?: string) => void lines.push(JSON.stringify([fields, msg])),
  error: (fields: unknown, msg?: string) => void lines.push(JSON.stringify([fields, msg])),
  info: (fields: unknown, msg?: string) => void lines.push(JSON.stringify([fields, msg])),
};

let s: Started;
let key: string;
let otherRoot: string;
beforeAll(async () => {
  s = await start({ logger });
  ({ key } = await s.createKey());
  ({ rootKey: otherRoot } = await s.service.createRootKey({ permissions: ["api.*.read_api"] }));
});
afterAll(() => s.close());

describe("a secret in the wrong field", () => {
  const secrets = () => [key, s.rootKey, otherRoot];
  const cases = (secret: string): Array<[string, Record<string, unknown>]> => [
    ["keys.getKey", { keyId: secret }],
    ["keys.deleteKey", { keyId: secret }],
    ["keys.updateKey", { keyId: secret, name: "x" }],
    ["keys.addRoles", { keyId: "key_missing", roles: [secret] }],
    ["apis.getApi", { apiId: secret }],
    ["apis.deleteApi", { apiId: secret }],
    ["permissions.getPermission", { permission: secret }],
    ["permissions.getRole", { role: secret }],
    ["identities.getIdentity", { identity: secret }],
    ["rootKeys.deleteRootKey", { keyId: secret }],
    ["rootKeys.createRootKey", { name: "x", permissions: [secret] }],
  ];

  it("is refused without repeating it, in every error body and log line", async () => {
    for (const secret of secrets()) {
      for (const [op, body] of cases(secret)) {
        const res = await s.call(op, body);
        expect(res.status, `${op}: ${JSON.stringify(res.body)}`).toBeGreaterThanOrEqual(400);
        const text = JSON.stringify(res.body);
        expect(text, op).not.toContain(secret);
        expect(text, op).not.toContain(secret.slice(-16));
      }
    }
    const roles = await s.call("keys.addRoles", { keyId: (await s.createKey()).keyId, roles: [key] });
    expect(roles.status).toBe(404);
    expect(roles.body.error.detail).toContain(`body.roles[0] (a string of ${key.length} characters)`);
    for (const line of lines) for (const secret of secrets()) expect(line).not.toContain(secret);
  });

  it("a root key without the permission is refused without the secret in the 403's list of permissions", async () => {
    const { rootKey: weak } = await s.service.createRootKey({ permissions: [] });
    for (const secret of secrets()) {
      for (const [op, body] of [
        ["apis.getApi", { apiId: secret }],
        ["apis.deleteApi", { apiId: secret }],
        ["keys.createKey", { apiId: secret }],
        ["ratelimit.limit", { namespace: secret, identifier: "x", limit: 1, duration: 1000 }],
        ["analytics.getVerifications", { query: `SELECT count(*) FROM key_verifications_v1 WHERE key_space_id = '${secret}'` }],
      ] as const) {
        const res = await s.call(op, body, weak);
        expect(res.status, `${op}: ${JSON.stringify(res.body)}`).toBeGreaterThanOrEqual(400);
        expect(JSON.stringify(res.body), op).not.toContain(secret.slice(-16));
      }
    }
    const denied = await s.call("apis.getApi", { apiId: key }, weak);
    expect(denied.status).toBe(403);
    expect(denied.body.error.detail).toBe("Missing one of these permissions: api.*.read_api or api.<apiId>.read_api");
    // An existing API's id sent by the caller is the caller's value too.
    const ours = await s.call("apis.getApi", { apiId: s.apiId }, weak);
    expect(ours.body.error.detail).toBe("Missing one of these permissions: api.*.read_api or api.<apiId>.read_api");
    // A tuple built from a record the service found (the key's API) names that record's id.
    const { keyId } = await s.createKey();
    const onKey = await s.call("keys.getKey", { keyId }, weak);
    expect(onKey.body.error.detail).toBe(`Missing one of these permissions: api.*.read_key or api.${s.apiId}.read_key`);
  });

  it("ids and names are described by their field and length, not quoted", async () => {
    const { keyId } = await s.createKey();
    expect((await s.call("keys.deleteKey", { keyId })).status).toBe(200);
    const gone = await s.call("keys.getKey", { keyId });
    expect(gone.status).toBe(404);
    expect(gone.body.error.detail).toBe(
      `The key, body.keyId (a string of ${keyId.length} characters), does not exist or has been deleted.`,
    );
    const perm = await s.call("permissions.getPermission", { permission: "docs.write" });
    expect(perm.status).toBe(404);
    expect(perm.body.error.detail).toContain("body.permission (a string of 10 characters)");
    expect(perm.body.error.detail).not.toContain("docs.write");
  });
});
