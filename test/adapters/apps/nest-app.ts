// The conformance scenario as a NestJS app over keyguard/nest, on the Express or the Fastify
// platform. Controllers are built with Nest's decorators called as functions (this project compiles
// without legacy decorators): one controller per route, its guards in order.
import "reflect-metadata";
import { All, Controller, Get, Module, Req, UseGuards, type CanActivate, type INestApplication } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import {
  ApiKeyGuard,
  KeyguardExceptionFilter,
  requireAnyPermission,
  requireKey,
  requirePermissions,
  requireRoles,
} from "../../../src/nest";
import { echo, isGold, scenarioRoutes, type GuardSpec, type ReportedDecision, type ScenarioEnv } from "../scenario";

function guardOf(spec: GuardSpec): CanActivate {
  if (spec.kind === "permissions") return requirePermissions(spec.query);
  if (spec.kind === "any") return requireAnyPermission(...spec.permissions);
  if (spec.kind === "roles") return requireRoles(...spec.roles);
  return requireKey(isGold, { description: "a gold key" });
}

type Handler = (req: { apiKey?: { keyId?: string }; headers: Record<string, unknown> }) => unknown;

/** A controller class with one method, `handle`, decorated as `decorate` says. */
function controller(handle: Handler, decorate: (proto: object, descriptor: PropertyDescriptor) => void): new () => object {
  class RouteController {
    handle(req: Parameters<Handler>[0]): unknown {
      return handle(req);
    }
  }
  const descriptor = Object.getOwnPropertyDescriptor(RouteController.prototype, "handle")!;
  decorate(RouteController.prototype, descriptor);
  Req()(RouteController.prototype, "handle", 0);
  Controller()(RouteController);
  return RouteController;
}

export async function nestScenario(env: ScenarioEnv, platform: "express" | "fastify"): Promise<INestApplication> {
  const decisions: ReportedDecision[] = [];
  const controllers = [
    controller(
      () => decisions.splice(0),
      (proto, d) => Get("/__decisions")(proto, "handle", d),
    ),
  ];
  for (const route of scenarioRoutes(env, decisions)) {
    const guards: CanActivate[] = [new ApiKeyGuard(route.options)];
    if (route.guard !== undefined) guards.push(guardOf(route.guard));
    controllers.push(
      controller(
        (req) => echo(req.apiKey?.keyId, { get: (name) => (req.headers[name] === undefined ? null : String(req.headers[name])) }),
        (proto, d) => {
          All(route.path)(proto, "handle", d);
          UseGuards(...guards)(proto, "handle", d);
        },
      ),
    );
  }
  class AppModule {}
  Module({ controllers })(AppModule);
  const app =
    platform === "express"
      ? await NestFactory.create(AppModule, { logger: false })
      : await NestFactory.create(AppModule, new FastifyAdapter(), { logger: false });
  app.useGlobalFilters(new KeyguardExceptionFilter());
  return app;
}
