// Type tests: the Express.Request augmentation, the handler and guard types, and the options.
import { describe, expectTypeOf, it } from "vitest";
import express, { type Request, type RequestHandler, type Response } from "express";
import {
  apiKeyAuth,
  getApiKey,
  requireKey,
  requirePermissions,
  type STATUS_PRESETS,
  type ApiKeyAuthHandler,
  type ApiKeyAuthOptions,
  type AuthDecision,
  type DeniedHandler,
  type KeyguardError,
  type VerifiedKey,
} from "keyguard";

describe("types", () => {
  it("augments Express.Request with apiKey", () => {
    expectTypeOf<Request["apiKey"]>().toEqualTypeOf<VerifiedKey | undefined>();
    expectTypeOf<VerifiedKey["valid"]>().toEqualTypeOf<true>();
    expectTypeOf<VerifiedKey["keyId"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<VerifiedKey["permissions"]>().toEqualTypeOf<string[]>();
    expectTypeOf<VerifiedKey["roles"]>().toEqualTypeOf<string[]>();
    expectTypeOf(getApiKey).returns.toEqualTypeOf<VerifiedKey | undefined>();
  });

  it("handlers and guards fit app.use and routes", () => {
    const app = express();
    const auth = apiKeyAuth({ rootKey: "x" });
    expectTypeOf(auth).toExtend<ApiKeyAuthHandler>();
    expectTypeOf(auth.invalidate).toEqualTypeOf<(key: string) => Promise<void>>();
    app.use(auth);
    app.get("/", auth, requirePermissions("docs.read"), (req, res) => {
      expectTypeOf(req.apiKey?.meta).toEqualTypeOf<Record<string, unknown> | undefined>();
      res.send("ok");
    });
    expectTypeOf(requirePermissions("a")).toExtend<RequestHandler>();
    app.get(
      "/t/:tenant",
      auth,
      requireKey<Request>((key, req) => key.meta?.tenant === req.params.tenant, { description: "a key of this tenant" }),
    );
  });

  it("onDecision gets the decision and the request as the app names its type; telemetry takes providers", () => {
    apiKeyAuth<Request>({
      rootKey: "x",
      onDecision: (decision, req) => {
        expectTypeOf(decision).toEqualTypeOf<AuthDecision>();
        expectTypeOf(req).toEqualTypeOf<Request>();
        expectTypeOf(decision.outcome).toEqualTypeOf<"admitted" | "denied">();
        expectTypeOf(decision.source).toEqualTypeOf<"cache" | "service" | "stale" | "none">();
        expectTypeOf(decision.serviceMs).toEqualTypeOf<number | undefined>();
      },
    });
    expectTypeOf<ApiKeyAuthOptions["telemetry"]>().toEqualTypeOf<
      | boolean
      | {
          tracerProvider?: { getTracer(name: string, version?: string): object };
          meterProvider?: { getMeter(name: string, version?: string): object };
          api?: object;
        }
      | undefined
    >();
  });

  it("options", () => {
    expectTypeOf<{ policy: typeof STATUS_PRESETS.forbidden }>().toExtend<ApiKeyAuthOptions>();
    expectTypeOf<{ permissions: (req: Request) => string }>().toExtend<ApiKeyAuthOptions<Request>>();
    expectTypeOf<{ cost: number; tags: string[]; cache: false; staleIfError: number }>().toExtend<ApiKeyAuthOptions>();
    expectTypeOf<{ onServiceError: "maybe" }>().not.toExtend<ApiKeyAuthOptions>();
    // The outcomes the middleware answers itself cannot be overridden; other codes can.
    expectTypeOf<{ policy: { EXPIRED: 403; NEW_CODE: { status: 402 } } }>().toExtend<ApiKeyAuthOptions>();
    expectTypeOf<{ policy: { SERVICE_UNAVAILABLE: 500 } }>().not.toExtend<ApiKeyAuthOptions>();
    expectTypeOf<{ policy: { VERIFICATION_FAILED: { status: 503 } } }>().not.toExtend<ApiKeyAuthOptions>();
    expectTypeOf<{ policy: { INSUFFICIENT_SCOPE: 401 } }>().not.toExtend<ApiKeyAuthOptions>();
    expectTypeOf<{ policy: { VALID: 200 } }>().not.toExtend<ApiKeyAuthOptions>();
    expectTypeOf<{ cost: string }>().not.toExtend<ApiKeyAuthOptions>();
    expectTypeOf<ReturnType<DeniedHandler>>().toEqualTypeOf<void | Promise<void>>();
    apiKeyAuth<Request, Response>({
      onDenied: async (err, _req, res) => {
        await Promise.resolve();
        res.status(err.status).json({ code: err.code });
      },
    });
    apiKeyAuth<Request, Response>({
      permissions: (req) => (req.params.id ? `docs.${req.params.id}.read` : undefined),
      onDenied: (err, _req, res) => {
        expectTypeOf(err).toEqualTypeOf<KeyguardError>();
        res.status(err.status).json({ code: err.code });
      },
    });
  });
});
