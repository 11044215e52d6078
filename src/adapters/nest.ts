// keyguard for NestJS (Express or Fastify platform): `ApiKeyGuard`, a Nest guard running the
// decision core; the permission and role guards; `KeyguardExceptionFilter`, which answers a denial
// with its problem+json body and headers through the platform's response; `@ApiKey()`, the verified
// key as a handler parameter. The option functions receive the platform's request.

import type { IncomingMessage, ServerResponse } from "node:http";
import {
  Catch,
  HttpException,
  createParamDecorator,
  type ArgumentsHost,
  type CanActivate,
  type ExceptionFilter,
  type ExecutionContext,
} from "@nestjs/common";
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

/** What the guards read of the platform's request: Express's is Node's, Fastify's holds it in `raw`. */
interface PlatformRequest {
  raw?: IncomingMessage;
  apiKey?: VerifiedKey | undefined;
}

const rawOf = (req: PlatformRequest): IncomingMessage => req.raw ?? (req as IncomingMessage);

/** A denial on its way to {@link KeyguardExceptionFilter} (without the filter, Nest answers `{ statusCode, message }`). */
export class KeyguardDeniedException extends HttpException {
  constructor(readonly denial: KeyguardError) {
    super(denial.expose ? denial.detail : denial.title, denial.status, { cause: denial });
  }
}

/** Answers {@link KeyguardDeniedException} with the denial's status, headers and problem+json body. Register it: `app.useGlobalFilters(new KeyguardExceptionFilter())`. */
export class KeyguardExceptionFilter implements ExceptionFilter<KeyguardDeniedException> {
  catch(exception: KeyguardDeniedException, host: ArgumentsHost): void {
    const answer = problemAnswer(exception.denial);
    const res = host.switchToHttp().getResponse<{ code?: unknown; raw?: ServerResponse }>();
    if (typeof res.code === "function") {
      // Fastify's reply.
      const reply = res as { code(s: number): { headers(h: object): { send(b: string): void } } };
      reply.code(answer.status).headers(answer.headers).send(answer.body);
      return;
    }
    const out = res as unknown as ServerResponse;
    if (out.headersSent) return void out.end();
    out.statusCode = answer.status;
    for (const [name, value] of Object.entries(answer.headers)) out.setHeader(name, value);
    out.setHeader("Content-Length", Buffer.byteLength(answer.body));
    out.end(answer.body);
  }
}
Catch(KeyguardDeniedException)(KeyguardExceptionFilter);

/** The options of {@link ApiKeyGuard}: the option functions receive the platform's request (Express's, or a FastifyRequest). */
export type NestApiKeyAuthOptions<Req = unknown> = AuthOptions<Req>;

/** Sets the verified key and its rate-limit headers on the platform's request and response: true; a denial throws. */
function admit(outcome: NodeOutcome, req: PlatformRequest, http: ReturnType<ExecutionContext["switchToHttp"]>): boolean {
  if (outcome.kind === "deny") throw new KeyguardDeniedException(outcome.error);
  req.apiKey = outcome.apiKey;
  if (outcome.headers !== undefined) {
    const res = http.getResponse<{ raw?: ServerResponse }>();
    const out = res.raw ?? (res as unknown as ServerResponse);
    for (const [name, value] of Object.entries(outcome.headers)) out.setHeader(name, value);
  }
  return true;
}

/**
 * A Nest guard that verifies the request's API key: `@UseGuards(new ApiKeyGuard({ rootKey, baseUrl }))`
 * or `app.useGlobalGuards(…)`. Admitted, the key is `req.apiKey` (and `@ApiKey()`); denied, it throws
 * {@link KeyguardDeniedException}.
 */
export class ApiKeyGuard<Req = unknown> implements CanActivate {
  private readonly decider: NodeDecider<Req>;

  constructor(options?: NestApiKeyAuthOptions<Req>) {
    this.decider = nodeDecider<Req>(options, "ApiKeyGuard");
  }

  // Not async: a kept answer decides synchronously and the guard answers true without a promise of
  // its own (Nest takes a boolean, a promise or an observable). A denial throws, from the promise
  // when the decision was asynchronous.
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<PlatformRequest>();
    const decision = this.decider.decide(req as Req, rawOf(req));
    return isThenable(decision) ? decision.then((outcome) => admit(outcome, req, http)) : admit(decision, req, http);
  }

  /** Forgets every answer kept for a key, here and with a shared store on every instance. */
  invalidate(key: string): Promise<void> {
    return this.decider.invalidate(key);
  }

  invalidateKeyId(keyId: string): Promise<void> {
    return this.decider.invalidateKeyId(keyId);
  }

  clear(): Promise<void> {
    return this.decider.clear();
  }
}

class CheckGuard<Req> implements CanActivate {
  constructor(private readonly check: GuardCheck<Req>) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<PlatformRequest>();
    const verdict = nodeGuard(this.check, req as Req, rawOf(req));
    const denial = isThenable(verdict) ? await verdict : verdict;
    if (denial !== undefined) throw new KeyguardDeniedException(denial);
    return true;
  }
}

/** A guard requiring the verified key's permissions to satisfy a query; after {@link ApiKeyGuard}. */
export const requirePermissions = (query: string): CanActivate => new CheckGuard(permissionsCheck(query));
/** A guard requiring at least one of the permissions. */
export const requireAnyPermission = (...permissions: string[]): CanActivate => new CheckGuard(anyPermissionCheck(permissions));
/** A guard requiring every one of the roles. */
export const requireRoles = (...roles: string[]): CanActivate => new CheckGuard(rolesCheck(roles));
/** A guard requiring `predicate(key, req)` (sync or async) to return true. */
export const requireKey = <Req = unknown>(
  predicate: (key: VerifiedKey, req: Req) => boolean | Promise<boolean>,
  options?: RequireKeyOptions,
): CanActivate => new CheckGuard(keyCheck(predicate, options));

/** The verified key as a handler parameter: `handler(@ApiKey() key: VerifiedKey | undefined)`. */
export const ApiKey = createParamDecorator(
  (_data: unknown, context: ExecutionContext) => context.switchToHttp().getRequest<PlatformRequest>().apiKey,
);
