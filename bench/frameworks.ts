// The apps of the adapters group: for each framework keyguard adapts to, the same route served bare,
// behind that framework's cheapest no-op (a middleware, hook or guard in the position keyguard
// takes, doing nothing), and behind keyguard (a cached key), in one process, so that the runner can
// compare the three in alternating rounds and read the process's CPU time per request. Started by
// servers.ts ("frameworks"); Bun and Deno serve the Web adapter from runtime-app.ts.
import "reflect-metadata";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import express from "express";
import { All, Controller, Module, UseGuards, type CanActivate } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import Fastify from "fastify";
import { Hono } from "hono";
import Koa from "koa";
import { apiKeyAuth as expressAuth, silentLogger } from "keyguard";
import { keyguard } from "keyguard/fastify";
import { apiKeyAuth as honoAuth, type ApiKeyEnv } from "keyguard/hono";
import { apiKeyAuth as koaAuth, type ApiKeyState } from "keyguard/koa";
import { ApiKeyGuard, KeyguardExceptionFilter } from "keyguard/nest";
import { webApiKeyAuth, type WebAuthResult } from "keyguard/web";
import { readsAuthorization } from "./reads-authorization";

/** What every protected app is given: the key service and the options every bench app uses. */
export interface FrameworkConfig {
  baseUrl: string;
  rootKey: string;
  deadline: number;
}

/** The frameworks measured, in the order the bench prints them. */
export const FRAMEWORKS = ["express", "fastify", "hono", "web", "koa", "nest-express", "nest-fastify"] as const;
export type Framework = (typeof FRAMEWORKS)[number];

/**
 * Each framework's apps, by URL: `<framework>` bare, `<framework>+noop` and `<framework>+keyguard`;
 * and `web+header`, the plain fetch handler that reads the Authorization header and nothing more.
 */
export type FrameworkApps = Record<`${Framework}` | `${Framework}+noop` | `${Framework}+keyguard` | "web+header", string>;

/** What an app is started with: nothing (bare), "noop" (the framework's cheapest no-op), or keyguard's options. */
type Protection = FrameworkConfig | "noop" | undefined;

const BODY = { ok: true };

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function expressApp(config?: Protection): Promise<string> {
  const app = express();
  if (config === "noop") app.use((_req, _res, next) => next());
  else if (config) app.use(expressAuth({ ...config, logger: silentLogger }));
  app.get("/r", (_req, res) => {
    res.json(BODY);
  });
  return listen(createServer(app));
}

async function fastifyApp(config?: Protection): Promise<string> {
  const app = Fastify();
  // A callback onRequest hook: Fastify's cheapest (an async one costs a promise per request).
  if (config === "noop") app.addHook("onRequest", (_request, _reply, done) => done());
  else if (config) await app.register(keyguard, { ...config, logger: silentLogger });
  app.get("/r", async () => BODY);
  return app.listen({ port: 0, host: "127.0.0.1" });
}

function honoApp(config?: Protection): Promise<string> {
  const app = new Hono<ApiKeyEnv>();
  // A middleware that hands on next()'s promise, without an async function of its own.
  if (config === "noop") app.use((_c, next) => next());
  else if (config) app.use(honoAuth({ ...config, logger: silentLogger }));
  app.get("/r", (c) => c.json(BODY));
  return listen(createAdaptorServer({ fetch: app.fetch }) as Server);
}

/** A plain fetch handler (Request in, Response out), served on Node by @hono/node-server as Bun or Deno would serve it. */
function webApp(config?: Protection | "header"): Promise<string> {
  const bare = (): Response => Response.json(BODY);
  if (!config) return listen(createAdaptorServer({ fetch: bare }) as Server);
  // A plain wrapper function calling the handler: what a fetch handler runs in keyguard's place.
  const wrap =
    (handler: (request: Request) => Response) =>
    (request: Request): Response =>
      handler(request);
  if (config === "noop") return listen(createAdaptorServer({ fetch: wrap(bare) }) as Server);
  if (config === "header") return listen(createAdaptorServer({ fetch: readsAuthorization(bare) }) as Server);
  const auth = webApiKeyAuth({ ...config, logger: silentLogger });
  const answer = (result: WebAuthResult | Response): Response =>
    result instanceof Response ? result : Response.json(BODY, { headers: result.headers });
  // auth.decide: the answer at once for a cached key (the documented form for a handler that may
  // return a Response or a promise of one), so the server takes its path for a Response given at once.
  return listen(
    createAdaptorServer({
      fetch: (request: Request) => {
        const result = auth.decide(request);
        return result instanceof Promise ? result.then(answer) : answer(result);
      },
    }) as Server,
  );
}

function koaApp(config?: Protection): Promise<string> {
  const app = new Koa<ApiKeyState>();
  // Koa's cheapest middleware: a plain function handing on next()'s promise.
  if (config === "noop") app.use((_ctx, next) => next());
  else if (config) app.use(koaAuth({ ...config, logger: silentLogger }));
  app.use((ctx) => {
    ctx.body = BODY;
  });
  return listen(createServer(app.callback()));
}

/** Nest's cheapest guard: canActivate answering true at once, without a promise. */
class NoopGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

async function nestApp(platform: "express" | "fastify", config?: Protection): Promise<string> {
  const guards: CanActivate[] =
    config === "noop" ? [new NoopGuard()] : config ? [new ApiKeyGuard({ ...config, logger: silentLogger })] : [];
  class RouteController {
    handle(): unknown {
      return BODY;
    }
  }
  const descriptor = Object.getOwnPropertyDescriptor(RouteController.prototype, "handle")!;
  All("/r")(RouteController.prototype, "handle", descriptor);
  if (guards.length > 0) UseGuards(...guards)(RouteController.prototype, "handle", descriptor);
  Controller()(RouteController);
  class AppModule {}
  Module({ controllers: [RouteController] })(AppModule);
  const app =
    platform === "express"
      ? await NestFactory.create(AppModule, { logger: false })
      : await NestFactory.create(AppModule, new FastifyAdapter(), { logger: false });
  app.useGlobalFilters(new KeyguardExceptionFilter());
  await app.listen(0, "127.0.0.1");
  return (await app.getUrl()).replace("[::1]", "127.0.0.1").replace("localhost", "127.0.0.1");
}

const START: Record<Framework, (config?: Protection) => Promise<string>> = {
  express: expressApp,
  fastify: fastifyApp,
  hono: honoApp,
  web: webApp,
  koa: koaApp,
  "nest-express": (config) => nestApp("express", config),
  "nest-fastify": (config) => nestApp("fastify", config),
};

export async function startFrameworks(config: FrameworkConfig): Promise<FrameworkApps> {
  const apps: Partial<FrameworkApps> = {};
  for (const name of FRAMEWORKS) {
    apps[name] = await START[name]();
    apps[`${name}+noop`] = await START[name]("noop");
    apps[`${name}+keyguard`] = await START[name](config);
  }
  apps["web+header"] = await webApp("header");
  return apps as FrameworkApps;
}
