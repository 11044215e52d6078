// The conformance scenario as an Express 5 app over apiKeyAuth() and its guards.
import express, { type RequestHandler } from "express";
import { apiKeyAuth, requireAnyPermission, requireKey, requirePermissions, requireRoles } from "keyguard";
import { echo, isGold, scenarioRoutes, type GuardSpec, type ReportedDecision, type ScenarioEnv } from "../scenario";

function guardOf(spec: GuardSpec): RequestHandler {
  if (spec.kind === "permissions") return requirePermissions(spec.query);
  if (spec.kind === "any") return requireAnyPermission(...spec.permissions);
  if (spec.kind === "roles") return requireRoles(...spec.roles);
  return requireKey(isGold, { description: "a gold key" });
}

export function expressScenario(env: ScenarioEnv): express.Express {
  const decisions: ReportedDecision[] = [];
  const app = express();
  app.get("/__decisions", (_req, res) => void res.json(decisions.splice(0)));
  for (const route of scenarioRoutes(env, decisions)) {
    const handlers: RequestHandler[] = [apiKeyAuth(route.options)];
    if (route.guard !== undefined) handlers.push(guardOf(route.guard));
    app.all(route.path, ...handlers, (req, res) => {
      res.json(echo(req.apiKey?.keyId, { get: (name) => (req.headers[name] === undefined ? null : String(req.headers[name])) }));
    });
  }
  return app;
}
