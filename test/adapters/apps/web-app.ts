// The conformance scenario as a fetch handler over keyguard/web: (Request) => Response.
import { requireAnyPermission, requireKey, requirePermissions, requireRoles, webApiKeyAuth, type WebGuard } from "../../../src/web";
import { echo, isGold, scenarioRoutes, type GuardSpec, type ReportedDecision, type ScenarioEnv } from "../scenario";

function guardOf(spec: GuardSpec | undefined): WebGuard | undefined {
  if (spec === undefined) return undefined;
  if (spec.kind === "permissions") return requirePermissions(spec.query);
  if (spec.kind === "any") return requireAnyPermission(...spec.permissions);
  if (spec.kind === "roles") return requireRoles(...spec.roles);
  return requireKey(isGold, { description: "a gold key" });
}

/** The scenario's handler, asking each route's auth through `auth(request)` or `auth.decide(request)`. */
export function webScenario(env: ScenarioEnv, through: "auth" | "decide"): (request: Request) => Promise<Response> {
  const decisions: ReportedDecision[] = [];
  const routes = new Map(
    scenarioRoutes(env, decisions).map((route) => [route.path, { auth: webApiKeyAuth(route.options), guard: guardOf(route.guard) }]),
  );
  return async (request) => {
    const path = new URL(request.url).pathname;
    if (path === "/__decisions") return Response.json(decisions.splice(0));
    const route = routes.get(path);
    if (route === undefined) return new Response("not found", { status: 404 });
    const result = await (through === "auth" ? route.auth(request) : route.auth.decide(request));
    if (result instanceof Response) return result;
    const denied = await route.guard?.(result.request);
    if (denied !== undefined) return denied;
    const response = Response.json(echo(result.apiKey?.keyId, result.request.headers));
    for (const [name, value] of Object.entries(result.headers ?? {})) response.headers.set(name, value);
    return response;
  };
}
