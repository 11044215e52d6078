// The conformance scenario as a Fastify app over keyguard/fastify: the plugin with the routes'
// shared options, each route's own in its config, guards as preHandler hooks.
import Fastify, { type FastifyInstance, type preHandlerAsyncHookHandler } from "fastify";
import {
  keyguard,
  requireAnyPermission,
  requireKey,
  requirePermissions,
  requireRoles,
  type FastifyApiKeyAuthOptions,
} from "../../../src/fastify";
import { echo, isGold, scenarioRoutes, type GuardSpec, type ReportedDecision, type ScenarioEnv } from "../scenario";

function guardOf(spec: GuardSpec): preHandlerAsyncHookHandler {
  if (spec.kind === "permissions") return requirePermissions(spec.query);
  if (spec.kind === "any") return requireAnyPermission(...spec.permissions);
  if (spec.kind === "roles") return requireRoles(...spec.roles);
  return requireKey(isGold, { description: "a gold key" });
}

export async function fastifyScenario(env: ScenarioEnv): Promise<FastifyInstance> {
  const decisions: ReportedDecision[] = [];
  const routes = scenarioRoutes(env, decisions);
  const app = Fastify();
  const { onDecision: _onDecision, ...shared } = routes[0]!.options;
  await app.register(keyguard, shared as FastifyApiKeyAuthOptions);
  app.get("/__decisions", { config: { keyguard: false } }, async () => decisions.splice(0));
  for (const route of routes) {
    app.route({
      method: ["GET", "OPTIONS"],
      url: route.path,
      config: { keyguard: route.options as FastifyApiKeyAuthOptions },
      ...(route.guard === undefined ? {} : { preHandler: guardOf(route.guard) }),
      handler: async (request) =>
        echo(request.apiKey?.keyId, { get: (name) => (request.headers[name] === undefined ? null : String(request.headers[name])) }),
    });
  }
  return app;
}
