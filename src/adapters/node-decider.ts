// The decision core for the Node frameworks other than Express (Koa, Fastify): the key hashed once
// per connection, the client over undici's pool, and what their guards need to know of a request
// (the verified key, the denial conventions), kept per Node request.

import { IncomingMessage } from "node:http";
import { createClient } from "../client/client";
import { ConfigError } from "../config-error";
import { optionChecks } from "../option-checks";
import { invalidateAll, invalidateKey, invalidateKeyId } from "../protocol/invalidation";
import {
  createDecisionCore,
  DEFAULT_DENIAL,
  frozenKey,
  isAdmitted,
  parseAuthOptions,
  PASS,
  removeHeaders,
  runGuard,
  type AuthOptions,
  type Decision,
  type DenialContext,
  type GuardCheck,
  type KeyguardError,
  type VerifiedKey,
} from "../middleware";
import { keyHash } from "../protocol/key-hash";
import { rememberedKeyHash } from "./key-hash-memo";
import { frameworkAddress } from "./framework-address";

/** What a Node adapter does with a decision: go on (with the key, or without one) or answer the denial. */
export type NodeOutcome =
  | { readonly kind: "next"; readonly apiKey: VerifiedKey | undefined; readonly headers: Readonly<Record<string, string>> | undefined }
  | { readonly kind: "deny"; readonly error: KeyguardError };

export interface NodeDecider<Req> {
  /** The decision for a request: `req` goes to the option functions, `raw` is Node's request. */
  decide(req: Req, raw: IncomingMessage): NodeOutcome | Promise<NodeOutcome>;
  invalidate(key: string): Promise<void>;
  invalidateKeyId(keyId: string): Promise<void>;
  clear(): Promise<void>;
}

interface Seen {
  readonly key: VerifiedKey | undefined;
  readonly denial: DenialContext;
}

// What an adapter saw of a request, for its guards: a property of the request where Node made it
// (one hidden-class transition all its requests share; a WeakMap entry per request costs more,
// in the garbage collector too), else (an Express request on NestJS, whose prototype Express
// swapped: there V8 before 13 builds a hidden class per property added) a WeakMap entry.
const SEEN = Symbol("keyguard.seen");
type Marked = IncomingMessage & { [SEEN]?: Seen };
const seenElsewhere = new WeakMap<IncomingMessage, Seen>();
const NODE_REQUEST = IncomingMessage.prototype;

function remember(raw: IncomingMessage, what: Seen): void {
  if (Object.getPrototypeOf(raw) === NODE_REQUEST) (raw as Marked)[SEEN] = what;
  else seenElsewhere.set(raw, what);
}

function recall(raw: IncomingMessage): Seen | undefined {
  return (raw as Marked)[SEEN] ?? seenElsewhere.get(raw);
}

/** The core for `name`'s options; `onDenied` and `passErrors` are Express's. */
export function nodeDecider<Req>(options: AuthOptions<Req> | undefined, name: string): NodeDecider<Req> {
  const given = options as Record<string, unknown> | undefined;
  for (const option of ["onDenied", "passErrors"]) {
    if (typeof given === "object" && given !== null && given[option] !== undefined) {
      optionChecks(name, ConfigError).fail(
        option,
        `${option} is apiKeyAuth()'s (Express/Connect); ${name} answers a denial with its problem+json response.`,
      );
    }
  }
  const config = parseAuthOptions<Req, never>(options, createClient);
  const core = createDecisionCore(config, {
    hash: rememberedKeyHash(keyHash),
    present: frozenKey,
    hide: (_req, view, names) => removeHeaders(view as IncomingMessage, names),
    address: frameworkAddress,
  });
  const outcome = (decision: Decision, raw: IncomingMessage): NodeOutcome => {
    if (decision !== PASS && !isAdmitted(decision)) {
      remember(raw, { key: undefined, denial: core.denial });
      return { kind: "deny", error: decision };
    }
    const apiKey = decision === PASS ? undefined : decision;
    remember(raw, { key: apiKey, denial: core.denial });
    return { kind: "next", apiKey, headers: apiKey === undefined ? undefined : core.admitHeaders(apiKey) };
  };
  return {
    decide(req, raw) {
      const decision = core.decide(req, raw);
      return decision instanceof Promise ? decision.then((d) => outcome(d, raw)) : outcome(decision, raw);
    },
    invalidate: (key) => core.invalidate(invalidateKey(key)),
    invalidateKeyId: (keyId) => core.invalidate(invalidateKeyId(keyId)),
    clear: () => core.invalidate(invalidateAll()),
  };
}

/** Runs a guard over what the adapter saw of this Node request: undefined to go on, else the denial. */
export function nodeGuard<Req>(
  check: GuardCheck<Req>,
  req: Req,
  raw: IncomingMessage,
): KeyguardError | undefined | Promise<KeyguardError | undefined> {
  const found = recall(raw);
  return runGuard(check, found?.key, req, found?.denial ?? DEFAULT_DENIAL);
}
