// The HTTP layer: envelopes, content negotiation, bad input (never a 500), routing, mounting,
// liveness, unexpected errors and injected outages.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import express from "express";
import express4 from "express4";
import request from "supertest";
import { afterAll, describe, expect, it, vi } from "vitest";
import { silentLogger } from "keyguard";
import { createLocalUnderTest } from "../../support/store-under-test";

const { app, service, close } = await createLocalUnderTest({ logger: silentLogger });
afterAll(close);
const auth = `Bearer ${service.rootKey}`;
const TYPE_BASE = "https://unkey.com/docs/api-reference/errors-v2";

describe("success envelopes", () => {
  it("GET /v2/liveness needs no auth", async () => {
    const res = await request(app).get("/v2/liveness").expect(200);
    expect(res.body).toEqual({ meta: { requestId: expect.stringMatching(/^req_/) }, data: { message: "OK" } });
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
  });

  it("request ids are unique", async () => {
    const a = await request(app).get("/v2/liveness");
    const b = await request(app).get("/v2/liveness");
    expect(a.body.meta.requestId).not.toBe(b.body.meta.requestId);
  });

  it("an operation without a body is accepted as {}", async () => {
    const res = await request(app).post("/v2/permissions.listPermissions").set("Authorization", auth).expect(200);
    expect(res.body).toEqual({ meta: { requestId: expect.any(String) }, data: [], pagination: { hasMore: false } });
  });
});

describe("bad input never gives a 500", () => {
  it("malformed JSON → 400 envelope with errors[]", async () => {
    const res = await request(app)
      .post("/v2/keys.verifyKey")
      .set("Authorization", auth)
      .set("Content-Type", "application/json")
      .send('{"key": ')
      .expect(400);
    expect(res.body.error).toMatchObject({ status: 400, title: "Bad Request", type: `${TYPE_BASE}/svc/application/invalid_input` });
    expect(res.body.error.errors).toEqual([expect.objectContaining({ location: "body" })]);
  });

  it("a JSON array or scalar body → 400", async () => {
    for (const body of ["[]", '"x"', "42"]) {
      const res = await request(app)
        .post("/v2/keys.verifyKey")
        .set("Authorization", auth)
        .set("Content-Type", "application/json")
        .send(body);
      expect(res.status).toBe(400);
      expect(Array.isArray(res.body.error.errors)).toBe(true);
    }
  });

  it("a body over 1 MB → 413 request_body_too_large", async () => {
    const big = JSON.stringify({ key: "x".repeat(1024 * 1024 + 10) });
    const res = await request(app).post("/v2/keys.verifyKey").set("Authorization", auth).set("Content-Type", "application/json").send(big);
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({
      status: 413,
      title: "Request Entity Too Large",
      type: `${TYPE_BASE}/user/bad_request/request_body_too_large`,
    });
  });

  it("a non-JSON content type → 400", async () => {
    const res = await request(app).post("/v2/keys.verifyKey").set("Authorization", auth).set("Content-Type", "text/plain").send("key=abc");
    expect(res.status).toBe(400);
    expect(res.body.error.errors[0]).toMatchObject({ location: "header.content-type" });
  });

  it("unknown path → 404 envelope; unknown operation → 404", async () => {
    for (const path of ["/nope", "/v2/keys.nope", "/v2/keys.verifyKey/extra", "/v1/keys.verifyKey"]) {
      const res = await request(app).post(path).set("Authorization", auth).send({});
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ meta: { requestId: expect.any(String) }, error: { status: 404, title: "Not Found" } });
    }
  });

  it("wrong method on a known path → 405 with Allow", async () => {
    const res = await request(app).get("/v2/keys.verifyKey").expect(405);
    expect(res.headers.allow).toBe("POST");
    expect(res.body.error).toMatchObject({ status: 405, title: "Method Not Allowed" });
    const live = await request(app).post("/v2/liveness").send({}).expect(405);
    expect(live.headers.allow).toBe("GET, HEAD");
  });

  it("validation runs before the root key is looked up, and reports every problem", async () => {
    const res = await request(app).post("/v2/keys.createKey").send({ prefix: "bad prefix!", byteLength: 3, extra: true }).expect(400);
    const locations = res.body.error.errors.map((e: { location: string }) => e.location).sort();
    expect(locations).toEqual(["body.apiId", "body.byteLength", "body.extra", "body.prefix"]);
    for (const e of res.body.error.errors) expect(e.message).toEqual(expect.any(String));
  });

  it("wrong types are reported with their location", async () => {
    const res = await request(app)
      .post("/v2/keys.verifyKey")
      .set("Authorization", auth)
      .send({ key: 5, credits: { cost: -1 } })
      .expect(400);
    expect(res.body.error.errors).toEqual([
      expect.objectContaining({ location: "body.key", message: "must be a string, got number" }),
      expect.objectContaining({ location: "body.credits.cost", message: "must be at least 0" }),
    ]);
  });

  it("null in a non-nullable field → 400", async () => {
    const res = await request(app)
      .post("/v2/keys.createKey")
      .set("Authorization", auth)
      .send({ apiId: service.apiId, name: null })
      .expect(400);
    expect(res.body.error.errors[0]).toMatchObject({ location: "body.name", message: "must not be null" });
  });
});

describe("reading the body", () => {
  const verify = () => request(app).post("/v2/keys.verifyKey").set("Authorization", auth);

  it("a +json content type and a query string are accepted", async () => {
    const res = await request(app)
      .post("/v2/keys.verifyKey?x=1")
      .set("Authorization", auth)
      .set("Content-Type", "application/vnd.api+json; charset=utf-8")
      .send(JSON.stringify({ key: "nope" }))
      .expect(200);
    expect(res.body.data).toMatchObject({ valid: false, code: "NOT_FOUND" });
  });

  it("a gzip-encoded body is decoded", async () => {
    // supertest would JSON-encode a Buffer body; fetch sends the bytes.
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v2/keys.verifyKey`, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json", "content-encoding": "gzip" },
        body: gzipSync(JSON.stringify({ key: "nope" })),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { data: { valid: boolean } }).data.valid).toBe(false);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("an unknown content encoding or a charset other than UTF-8 → 400 could not be read", async () => {
    const enc = await verify().set("Content-Type", "application/json").set("Content-Encoding", "zstd-ish").send("{}").expect(400);
    expect(enc.body.error.detail).toBe("The request body could not be read.");
    const latin = await verify().set("Content-Type", "application/json; charset=latin1").send("{}").expect(400);
    expect(latin.body.error.errors[0]).toMatchObject({ location: "body" });
  });

  it("a declared Content-Length over 1 MB → 413 before the body is read", async () => {
    const res = await verify()
      .set("Content-Type", "application/json")
      .set("Content-Length", String(2 * 1024 * 1024))
      .send("{}");
    expect(res.status).toBe(413);
  });

  it("a chunked empty body counts as {}", async () => {
    const res = await request(app)
      .post("/v2/permissions.listPermissions")
      .set("Authorization", auth)
      .set("Transfer-Encoding", "chunked")
      .set("Content-Type", "application/json")
      .send("");
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
  });

  it("whitespace then a body, and a UTF-8 byte order mark, are accepted", async () => {
    await verify().set("Content-Type", "application/json").send('\n  {"key":"nope"}').expect(200);
    await verify().set("Content-Type", "application/json").send('\uFEFF{"key":"nope"}').expect(200);
  });

  it("HEAD on liveness answers 200 without a body", async () => {
    const res = await request(app).head("/v2/liveness").expect(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.text ?? "").toBe("");
  });
});

describe("content negotiation of error bodies", () => {
  const cases: Array<[string | undefined, string]> = [
    ["application/json", "application/json"],
    ["application/problem+json", "application/problem+json"],
    ["application/json, application/problem+json;q=0.9", "application/problem+json"],
    ["application/*", "application/problem+json"],
    ["*/*", "application/problem+json"],
    ["text/html", "application/json"],
    [undefined, "application/json"],
  ];
  it.each(cases)("Accept %s → %s", async (accept, expected) => {
    const req = request(app).post("/v2/keys.verifyKey").send({});
    if (accept) req.set("Accept", accept);
    else req.unset("Accept");
    const res = await req;
    expect(res.status).toBe(400);
    expect(res.headers["content-type"]?.split(";")[0]).toBe(expected);
  });
});

describe("mounting and faults", () => {
  it("works under a path prefix", async () => {
    const outer = express();
    outer.use("/keys-service", app);
    await request(outer).get("/keys-service/v2/liveness").expect(200);
    const res = await request(outer)
      .post("/keys-service/v2/apis.getApi")
      .set("Authorization", auth)
      .send({ apiId: service.apiId })
      .expect(200);
    expect(res.body.data).toMatchObject({ id: service.apiId, name: "default" });
  });

  it("mounts under a prefix in Express 4 too", async () => {
    const outer = express4();
    outer.use("/ks", app);
    const res = await request(outer).post("/ks/v2/apis.getApi").set("Authorization", auth).send({ apiId: service.apiId }).expect(200);
    expect(res.body.data).toMatchObject({ id: service.apiId, name: "default" });
    await request(outer).post("/ks/v2/keys.nope").send({}).expect(404);
  });

  it("serves from a plain node:http server, keep-alive connections reused", async () => {
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${base}/v2/keys.verifyKey`, {
          method: "POST",
          headers: { authorization: auth, "content-type": "application/json" },
          body: JSON.stringify({ key: "nope" }),
        });
        expect(res.status).toBe(200);
        expect(((await res.json()) as { data: { code: string } }).data.code).toBe("NOT_FOUND");
      }
      const bad = await fetch(`${base}/v2/keys.verifyKey`, { method: "POST", headers: { "content-type": "application/json" }, body: "{" });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { detail: string } }).error.detail).toBe("The request body is not valid JSON.");
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("setUnavailable({failures: 2}) answers 503 with Retry-After twice, then recovers", async () => {
    const local = await createLocalUnderTest({ logger: silentLogger });
    local.service.setUnavailable({ failures: 2, retryAfter: 3 });
    for (let i = 0; i < 2; i++) {
      const res = await request(local.app).get("/v2/liveness").expect(503);
      expect(res.headers["retry-after"]).toBe("3");
      expect(res.body.error).toMatchObject({
        status: 503,
        title: "Service Unavailable",
        type: `${TYPE_BASE}/svc/application/service_unavailable`,
      });
    }
    await request(local.app).get("/v2/liveness").expect(200);
    await local.close();
  });

  it("setUnavailable(true) fails everything until setUnavailable(false)", async () => {
    const local = await createLocalUnderTest({ logger: silentLogger });
    local.service.setUnavailable(true);
    for (let i = 0; i < 5; i++) {
      const res = await request(local.app)
        .post("/v2/keys.verifyKey")
        .set("Authorization", `Bearer ${local.service.rootKey}`)
        .send({ key: "k" });
      expect(res.status).toBe(503);
      expect(res.headers["retry-after"]).toBe("1");
    }
    local.service.setUnavailable(false);
    await request(local.app).get("/v2/liveness").expect(200);
    await local.close();
  });

  it("setUnavailable rejects nonsense", () => {
    expect(() => service.setUnavailable({ failures: 0 })).toThrow(/failures/);
  });

  it("an unexpected exception → 500 unexpected_error without internals, logged", async () => {
    let broken = false;
    const logger = { warn: vi.fn(), error: vi.fn() };
    const local = await createLocalUnderTest({
      logger,
      now: () => {
        if (broken) throw new Error("clock exploded");
        return Date.now();
      },
    });
    broken = true;
    const res = await request(local.app)
      .post("/v2/keys.verifyKey")
      .set("Authorization", `Bearer ${local.service.rootKey}`)
      .send({ key: "k" });
    expect(res.status).toBe(500);
    expect(res.body.error).toMatchObject({
      status: 500,
      title: "Internal Server Error",
      type: `${TYPE_BASE}/svc/application/unexpected_error`,
    });
    expect(JSON.stringify(res.body)).not.toContain("exploded");
    expect(logger.error).toHaveBeenCalledOnce();
    expect(JSON.stringify(logger.error.mock.calls)).not.toContain(local.service.rootKey);
    await local.close();
  });
});
