// Type tests of the adapters: where each framework's code finds the verified key, and what the
// option functions and guards receive.
import type { Context as HonoContext } from "hono";
import { Hono } from "hono";
import type { FastifyRequest } from "fastify";
import type { Context as KoaContext } from "koa";
import { describe, expectTypeOf, it } from "vitest";
import type { VerifiedKey } from "keyguard";
import { webApiKeyAuth, requireRoles as webRequireRoles, type WebAuthResult } from "keyguard/web";
import { apiKeyAuth as honoAuth, type ApiKeyEnv } from "keyguard/hono";
import type { ApiKeyState, KoaApiKeyAuthOptions } from "keyguard/koa";
import type { FastifyApiKeyAuthOptions } from "keyguard/fastify";

describe("adapter types", () => {
  it("keyguard/web: a Request to a result or a Response; guards take the Request", () => {
    const auth = webApiKeyAuth({ getKey: (request) => request.headers.get("x-key") });
    expectTypeOf(auth).parameter(0).toEqualTypeOf<Request>();
    expectTypeOf(auth).returns.toEqualTypeOf<Promise<WebAuthResult | Response>>();
    expectTypeOf<WebAuthResult["apiKey"]>().toEqualTypeOf<VerifiedKey | undefined>();
    expectTypeOf(webRequireRoles("admin")).toEqualTypeOf<(request: Request) => Promise<Response | undefined>>();
  });

  it('keyguard/hono: c.get("apiKey") through the Variables of ApiKeyEnv; option functions get the Context', () => {
    const app = new Hono<ApiKeyEnv>();
    app.use(
      honoAuth({
        permissions: (c) => {
          expectTypeOf(c).toEqualTypeOf<HonoContext>();
          return "docs.read";
        },
      }),
    );
    app.get("/", (c) => {
      expectTypeOf(c.get("apiKey")).toEqualTypeOf<VerifiedKey | undefined>();
      return c.text("ok");
    });
  });

  it("keyguard/koa: ctx.state.apiKey; option functions get ctx", () => {
    expectTypeOf<ApiKeyState["apiKey"]>().toEqualTypeOf<VerifiedKey | undefined>();
    expectTypeOf<NonNullable<KoaApiKeyAuthOptions["getKey"]>>().parameter(0).toEqualTypeOf<KoaContext>();
  });

  it("keyguard/fastify: request.apiKey by declaration merging; route config.keyguard", () => {
    expectTypeOf<FastifyRequest["apiKey"]>().toEqualTypeOf<VerifiedKey | undefined>();
    expectTypeOf<NonNullable<FastifyApiKeyAuthOptions["getKey"]>>().parameter(0).toEqualTypeOf<FastifyRequest>();
  });
});
