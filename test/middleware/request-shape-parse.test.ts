// "Options parsed once": a fixed permission query is parsed when apiKeyAuth() is created, not on
// each request, also when another shape option is a function. Parsing again would answer the same,
// so nothing a caller sees differs: this counts the parser's calls.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import express from "express";
import request from "supertest";
import { apiKeyAuth, silentLogger } from "../../src/index";
import * as permissionQuery from "../../src/protocol/permission-query";
import { startStub, verifyAnswer } from "./helpers";
import { GENEROUS } from "../support/time-limits";

vi.mock("../../src/protocol/permission-query", async (importOriginal) => {
  const actual = await importOriginal<typeof permissionQuery>();
  return { ...actual, parsePermissionQuery: vi.fn(actual.parsePermissionQuery) };
});
const parse = vi.mocked(permissionQuery.parsePermissionQuery);

// A stub service (the local service would parse queries with the same, counted, parser).
let stub: Awaited<ReturnType<typeof startStub>>;
beforeAll(async () => {
  stub = await startStub(verifyAnswer({ valid: true, code: "VALID", keyId: "key_1", permissions: ["docs.read"] }));
});
afterAll(() => stub.close());
const service = () => ({ rootKey: "root_key_for_tests", baseUrl: stub.baseUrl, logger: silentLogger, cache: false as const, ...GENEROUS });
const KEY = "sk_test_key_123";
beforeEach(() => {
  parse.mockClear();
});

describe("a fixed permission query", () => {
  it.each([
    ["a computed cost", { cost: () => 1 }],
    ["computed tags", { tags: () => ["t"] }],
    ["computed rate limits", { ratelimits: () => [{ name: "requests", limit: 100, duration: 60_000 }] }],
    ["nothing computed", {}],
  ])("with %s is parsed once, at creation", async (_name, computed) => {
    const auth = apiKeyAuth({ ...service(), permissions: "docs.read", ...computed });
    expect(parse).toHaveBeenCalledTimes(1);
    const app = express().get("/", auth, (_q, r) => r.send("ok"));
    for (let i = 0; i < 3; i++) expect((await request(app).get("/").set("X-API-Key", KEY)).status).toBe(200);
    expect(parse).toHaveBeenCalledTimes(1);
  });

  it("a computed query is parsed on each request, as it may change", async () => {
    const auth = apiKeyAuth({ ...service(), permissions: () => "docs.read" });
    const app = express().get("/", auth, (_q, r) => r.send("ok"));
    for (let i = 0; i < 3; i++) expect((await request(app).get("/").set("X-API-Key", KEY)).status).toBe(200);
    expect(parse).toHaveBeenCalledTimes(3);
  });
});
