// unknownKeyLimit in every adapter besides Express's (test/middleware/unknown-key-limit.test.ts):
// Koa, Fastify and NestJS (both platforms) count by the framework's own address, Hono by the
// address function it must be given. One unknown key passes to the service (401), the next from
// the same address is 429 without a call. A real key service on port 0 counts the calls.
import "reflect-metadata";
import { All, Controller, Module, UseGuards } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import Fastify from "fastify";
import { Hono } from "hono";
import Koa from "koa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "keyguard";
import { keyguard } from "../../src/fastify";
import { apiKeyAuth as honoAuth, type ApiKeyEnv } from "../../src/hono";
import { apiKeyAuth as koaAuth } from "../../src/koa";
import { ApiKeyGuard, KeyguardExceptionFilter } from "../../src/nest";
import { countingClient, startService, type ServiceFixture } from "../middleware/helpers";
import { GENEROUS } from "../support/time-limits";
import { serveFetch, serveListener } from "./serve-node";
import type { RunningApp } from "./conformance";

let fx: ServiceFixture;
const running: RunningApp[] = [];
beforeAll(async () => {
  fx = await startService();
});
afterAll(async () => {
  for (const app of running) await app.close();
  await fx.close();
});

let serial = 0;
const unknownKey = () => `sk_adapter_unknown${++serial}xxxxxxxxxxxxxx`;
const LIMIT = { max: 1, window: 60_000 } as const;

function options() {
  const { client, calls } = countingClient(fx.svc);
  return { calls, options: { client, logger: silentLogger, ...GENEROUS } };
}

/** Statuses of two unknown keys in a row, and the service calls they made. */
async function twoUnknown(app: RunningApp, calls: { count: number }): Promise<{ statuses: number[]; calls: number }> {
  running.push(app);
  const statuses = [];
  for (let i = 0; i < 2; i++) {
    statuses.push((await fetch(`${app.url}/`, { headers: { authorization: `Bearer ${unknownKey()}` } })).status);
  }
  return { statuses, calls: calls.count };
}

describe("unknownKeyLimit in each adapter", () => {
  it("Koa: by ctx.ip", async () => {
    const { calls, options: base } = options();
    const app = new Koa();
    app.use(koaAuth({ ...base, unknownKeyLimit: LIMIT }));
    app.use((ctx) => {
      ctx.body = "ok";
    });
    expect(await twoUnknown(await serveListener(app.callback()), calls)).toEqual({ statuses: [401, 429], calls: 1 });
  });

  it("Fastify: by request.ip", async () => {
    const { calls, options: base } = options();
    const app = Fastify();
    await app.register(keyguard, { ...base, unknownKeyLimit: LIMIT });
    app.get("/", async () => "ok");
    await app.listen({ port: 0, host: "127.0.0.1" });
    const address = app.server.address() as { port: number };
    const served: RunningApp = { url: `http://127.0.0.1:${address.port}`, close: () => app.close() };
    expect(await twoUnknown(served, calls)).toEqual({ statuses: [401, 429], calls: 1 });
  });

  for (const platform of ["express", "fastify"] as const) {
    it(`NestJS on ${platform}: by the platform request's ip`, async () => {
      const { calls, options: base } = options();
      class Route {
        handle(): string {
          return "ok";
        }
      }
      const d = Object.getOwnPropertyDescriptor(Route.prototype, "handle")!;
      All("/")(Route.prototype, "handle", d);
      UseGuards(new ApiKeyGuard({ ...base, unknownKeyLimit: LIMIT }))(Route.prototype, "handle", d);
      Controller()(Route);
      class AppModule {}
      Module({ controllers: [Route] })(AppModule);
      const app =
        platform === "express"
          ? await NestFactory.create(AppModule, { logger: false })
          : await NestFactory.create(AppModule, new FastifyAdapter(), { logger: false });
      app.useGlobalFilters(new KeyguardExceptionFilter());
      await app.listen(0, "127.0.0.1");
      const served: RunningApp = { url: (await app.getUrl()).replace("[::1]", "127.0.0.1"), close: () => app.close() };
      expect(await twoUnknown(served, calls)).toEqual({ statuses: [401, 429], calls: 1 });
    });
  }

  it("Hono: by the address function it is given; without one it refuses to start", async () => {
    const { calls, options: base } = options();
    expect(() => honoAuth({ ...base, unknownKeyLimit: LIMIT })).toThrow(/unknownKeyLimit\.address/);
    const app = new Hono<ApiKeyEnv>();
    app.use("*", honoAuth({ ...base, unknownKeyLimit: { ...LIMIT, address: (c) => c.req.header("x-client") ?? "unknown" } }));
    app.get("/", (c) => c.text("ok"));
    expect(await twoUnknown(await serveFetch(app.fetch), calls)).toEqual({ statuses: [401, 429], calls: 1 });
  });
});
