// The conformance scenario as a Hono app over keyguard/hono.
import { Hono, type MiddlewareHandler } from "hono";
import { apiKeyAuth, requireAnyPermission, requireKey, requirePermissions, requireRoles, type ApiKeyEnv } from "../../../src/hono";
import { echo, isGold, scenarioRoutes, type GuardSpec, type ReportedDecision, type ScenarioEnv } from "../scenario";

function guardOf(spec: GuardSpec): MiddlewareHandler<ApiKeyEnv> {
  if (spec.kind === "permissions") return requirePermissions(spec.query);
  if (spec.kind === "any") return requireAnyPermission(...spec.permissions);
  if (spec.kind === "roles") return requireRoles(...spec.roles);
  return requireKey(isGold, { description: "a gold key" });
}

export function honoScenario(env: ScenarioEnv): Hono<ApiKeyEnv> {
  const decisions: ReportedDecision[] = [];
  const app = new Hono<ApiKeyEnv>();
  app.get("/__decisions", (c) => c.json(decisions.splice(0)));
  for (const route of scenarioRoutes(env, decisions)) {
    app.use(route.path, apiKeyAuth(route.options));
    if (route.guard !== undefined) app.use(route.path, guardOf(route.guard));
    app.all(route.path, (c) => c.json(echo(c.get("apiKey")?.keyId, c.req.raw.headers)));
  }
  return app;
}
