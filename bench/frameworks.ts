// The apps of the adapters group: for each framework keyguard adapts to, the same route served bare
// and behind keyguard (a cached key), in one process, so that the runner can compare each pair in
// alternating rounds and read the process's CPU time per request. Started by servers.ts ("frameworks").
import "reflect-metadata";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { All, Controller, Module, UseGuards, type CanActivate } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import Fastify from "fastify";
import { Hono } from "hono";
import Koa from "koa";
import { silentLogger } from "keyguard";
import { keyguard } from "keyguard/fastify";
import { apiKeyAuth as honoAuth, type ApiKeyEnv } from "keyguard/hono";
import { apiKeyAuth as koaAuth, type ApiKeyState } from "keyguard/koa";
import { ApiKeyGuard, KeyguardExceptionFilter } from "keyguard/nest";
import { webApiKeyAuth } from "keyguard/web";

/** What every protected app is given: the key service and the options every bench app uses. */
export interface FrameworkConfig {
  baseUrl: string;
  rootKey: string;
  deadline: number;
}

/** The frameworks measured, in the order the bench prints them. */
export const FRAMEWORKS = ["fastify", "hono", "web", "koa", "nest-express", "nest-fastify"] as const;
export type Framework = (typeof FRAMEWORKS)[number];

/**
 * Frameworks whose server answers a handler's Response by another path when it comes in a promise
 * (@hono/node-server): they also get an app with an async no-op middleware, the reference that
 * separates keyguard's own cost from that of being asynchronous at all.
 */
export const ASYNC_REFERENCE = ["hono", "web"] as const satisfies readonly Framework[];

/** Each framework's apps: `<framework>` bare, `<framework>+keyguard`, and for some `<framework>+noop`, by URL. */
export type FrameworkApps = Record<`${Framework}` | `${Framework}+keyguard`, string> &
  Record<`${(typeof ASYNC_REFERENCE)[number]}+noop`, string>;

const BODY = { ok: true };

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function fastifyApp(config?: FrameworkConfig): Promise<string> {
  const app = Fastify();
  if (config) await app.register(keyguard, { ...config, logger: silentLogger });
  app.get("/r", async () => BODY);
  return app.listen({ port: 0, host: "127.0.0.1" });
}

function honoApp(config?: FrameworkConfig | "noop"): Promise<string> {
  const app = new Hono<ApiKeyEnv>();
  if (config === "noop") {
    app.use(async (_c, next) => {
      await next();
    });
  } else if (config) app.use(honoAuth({ ...config, logger: silentLogger }));
  app.get("/r", (c) => c.json(BODY));
  return listen(createAdaptorServer({ fetch: app.fetch }) as Server);
}

/** A plain fetch handler (Request in, Response out), served on Node by @hono/node-server as Bun or Deno would serve it. */
function webApp(config?: FrameworkConfig | "noop"): Promise<string> {
  if (!config) return listen(createAdaptorServer({ fetch: () => Response.json(BODY) }) as Server);
  if (config === "noop") return listen(createAdaptorServer({ fetch: async () => Response.json(BODY) }) as Server);
  const auth = webApiKeyAuth({ ...config, logger: silentLogger });
  return listen(
    createAdaptorServer({
      fetch: async (request: Request) => {
        const result = await auth(request);
        if (result instanceof Response) return result;
        return Response.json(BODY, { headers: result.headers });
      },
    }) as Server,
  );
}

function koaApp(config?: FrameworkConfig): Promise<string> {
  const app = new Koa<ApiKeyState>();
  if (config) app.use(koaAuth({ ...config, logger: silentLogger }));
  app.use((ctx) => {
    ctx.body = BODY;
  });
  return listen(createServer(app.callback()));
}

async function nestApp(platform: "express" | "fastify", config?: FrameworkConfig): Promise<string> {
  const guards: CanActivate[] = config ? [new ApiKeyGuard({ ...config, logger: silentLogger })] : [];
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

const START: Record<Framework, (config?: FrameworkConfig) => Promise<string>> = {
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
    apps[`${name}+keyguard`] = await START[name](config);
  }
  apps["hono+noop"] = await honoApp("noop");
  apps["web+noop"] = await webApp("noop");
  return apps as FrameworkApps;
}
