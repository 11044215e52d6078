// keyguard for Fastify: a plugin (fastify-plugin, so it protects the whole app) whose onRequest
// hook runs the decision core. The verified key is `request.apiKey`; a route's `config.keyguard`
// gives its own options (merged over the plugin's) or `false` for none; the guards are preHandler
// hooks; denials are sent with Fastify's reply. The option functions receive the FastifyRequest.

import type { FastifyPluginAsync, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from "fastify";
import fp from "fastify-plugin";
import {
  anyPermissionCheck,
  isThenable,
  keyCheck,
  permissionsCheck,
  problemAnswer,
  rolesCheck,
  type AuthOptions,
  type GuardCheck,
  type KeyguardError,
  type RequireKeyOptions,
  type VerifiedKey,
} from "../middleware";
import { nodeDecider, nodeGuard, type NodeDecider, type NodeOutcome } from "./node-decider";

/** The options of the plugin (and of a route's `config.keyguard`): the option functions receive the FastifyRequest. */
export type FastifyApiKeyAuthOptions = AuthOptions<FastifyRequest>;

/** `fastify.keyguard`: forgets kept answers in every route's auth. */
export interface KeyguardInvalidation {
  invalidate(key: string): Promise<void>;
  invalidateKeyId(keyId: string): Promise<void>;
  clear(): Promise<void>;
}

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the keyguard plugin when the request's API key was verified; undefined otherwise. */
    apiKey: VerifiedKey | undefined;
  }
  interface FastifyContextConfig {
    /** This route's options, merged over the plugin's; `false`: the route is not protected. */
    keyguard?: FastifyApiKeyAuthOptions | false;
  }
  interface FastifyInstance {
    keyguard: KeyguardInvalidation;
  }
}

function deny(reply: FastifyReply, err: KeyguardError): FastifyReply {
  const answer = problemAnswer(err);
  return reply.code(answer.status).headers(answer.headers).send(answer.body);
}

const plugin: FastifyPluginAsync<FastifyApiKeyAuthOptions> = async (fastify, options) => {
  // Fastify adds its own plugin options (none of ours); only ours go to the core.
  const { prefix: _prefix, logLevel: _logLevel, ...own } = options as FastifyApiKeyAuthOptions & { prefix?: unknown; logLevel?: unknown };
  const base = nodeDecider<FastifyRequest>(own, "keyguard");
  const deciders: NodeDecider<FastifyRequest>[] = [base];
  const byRoute = new WeakMap<object, NodeDecider<FastifyRequest>>();
  const forRoute = (config: FastifyApiKeyAuthOptions): NodeDecider<FastifyRequest> => {
    let decider = byRoute.get(config);
    if (decider === undefined) {
      byRoute.set(config, (decider = nodeDecider<FastifyRequest>({ ...own, ...config }, "keyguard")));
      deciders.push(decider);
    }
    return decider;
  };
  const all = (run: (d: NodeDecider<FastifyRequest>) => Promise<void>) => Promise.all(deciders.map(run)).then(() => undefined);
  fastify.decorate("keyguard", {
    invalidate: (key: string) => all((d) => d.invalidate(key)),
    invalidateKeyId: (keyId: string) => all((d) => d.invalidateKeyId(keyId)),
    clear: () => all((d) => d.clear()),
  });
  fastify.decorateRequest("apiKey", undefined);
  // A route's options are checked when it is added, not at its first request.
  fastify.addHook("onRoute", (route) => {
    const config = (route.config as { keyguard?: unknown } | undefined)?.keyguard;
    if (typeof config === "object" && config !== null) forRoute(config as FastifyApiKeyAuthOptions);
  });
  // A callback hook, not an async one: a kept answer decides synchronously, and the request goes on
  // without a promise in between. Denied, the reply is sent and `done` is not called (Fastify's rule).
  fastify.addHook("onRequest", (request, reply, done) => {
    const config = request.routeOptions.config?.keyguard;
    if (config === false) return done();
    const decider = config === undefined ? base : forRoute(config);
    let decision: ReturnType<NodeDecider<FastifyRequest>["decide"]>;
    try {
      decision = decider.decide(request, request.raw);
    } catch (e) {
      return done(e as Error);
    }
    if (isThenable(decision)) decision.then((outcome) => settle(outcome, request, reply, done), done);
    else settle(decision, request, reply, done);
  });
};

function settle(outcome: NodeOutcome, request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void {
  if (outcome.kind === "deny") {
    deny(reply, outcome.error);
    return;
  }
  request.apiKey = outcome.apiKey;
  if (outcome.headers !== undefined) reply.headers(outcome.headers);
  done();
}

/**
 * Protects a Fastify app with API keys verified by the key service.
 *
 * ```ts
 * await app.register(keyguard, { rootKey, baseUrl });
 * app.get("/docs", { config: { keyguard: { permissions: "docs.read" } } }, (request) => request.apiKey?.keyId);
 * ```
 */
export const keyguard = fp(plugin, { fastify: "5.x", name: "keyguard" });

function fastifyGuard(check: GuardCheck<FastifyRequest>): preHandlerAsyncHookHandler {
  return async function (request, reply) {
    const verdict = nodeGuard(check, request, request.raw);
    const denial = isThenable(verdict) ? await verdict : verdict;
    if (denial !== undefined) return deny(reply, denial);
  };
}

/** A preHandler requiring the verified key's permissions to satisfy a query, e.g. `"docs.read AND (docs.write OR admin)"`. */
export const requirePermissions = (query: string): preHandlerAsyncHookHandler => fastifyGuard(permissionsCheck(query));
/** A preHandler requiring at least one of the permissions. */
export const requireAnyPermission = (...permissions: string[]): preHandlerAsyncHookHandler => fastifyGuard(anyPermissionCheck(permissions));
/** A preHandler requiring every one of the roles. */
export const requireRoles = (...roles: string[]): preHandlerAsyncHookHandler => fastifyGuard(rolesCheck(roles));
/** A preHandler requiring `predicate(key, request)` (sync or async) to return true; what it throws goes to Fastify's error handler. */
export const requireKey = (
  predicate: (key: VerifiedKey, request: FastifyRequest) => boolean | Promise<boolean>,
  options?: RequireKeyOptions,
): preHandlerAsyncHookHandler => fastifyGuard(keyCheck(predicate, options));
