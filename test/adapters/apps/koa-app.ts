// The conformance scenario as a Koa app over keyguard/koa (each route's middleware run in order).
import Koa, { type Middleware } from "koa";
import { apiKeyAuth, requireAnyPermission, requireKey, requirePermissions, requireRoles, type ApiKeyState } from "../../../src/koa";
import { echo, isGold, scenarioRoutes, type GuardSpec, type ReportedDecision, type ScenarioEnv } from "../scenario";

function guardOf(spec: GuardSpec): Middleware<ApiKeyState> {
  if (spec.kind === "permissions") return requirePermissions(spec.query);
  if (spec.kind === "any") return requireAnyPermission(...spec.permissions);
  if (spec.kind === "roles") return requireRoles(...spec.roles);
  return requireKey(isGold, { description: "a gold key" });
}

export function koaScenario(env: ScenarioEnv): Koa<ApiKeyState> {
  const decisions: ReportedDecision[] = [];
  const routes = new Map<string, Middleware<ApiKeyState>[]>();
  for (const route of scenarioRoutes(env, decisions)) {
    const chain: Middleware<ApiKeyState>[] = [apiKeyAuth(route.options)];
    if (route.guard !== undefined) chain.push(guardOf(route.guard));
    chain.push((ctx) => {
      ctx.body = echo(ctx.state.apiKey?.keyId, { get: (name) => ctx.get(name) || null });
    });
    routes.set(route.path, chain);
  }
  const app = new Koa<ApiKeyState>();
  app.use(async (ctx) => {
    if (ctx.path === "/__decisions") {
      ctx.body = decisions.splice(0);
      return;
    }
    const chain = routes.get(ctx.path);
    if (chain === undefined) return;
    const run = (i: number): Promise<void> => Promise.resolve(chain[i]?.(ctx, () => run(i + 1)));
    await run(0);
  });
  return app;
}
