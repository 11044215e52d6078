// Shadow verification (`shadow`): for a sampled share of the requests the key service answered, the
// same verification is sent to a second service after the decision, off the request path, and the
// two answers are compared (valid, code, permissions, roles, credits left). A disagreement goes to
// `onDisagreement` and the log, and with `telemetry` every comparison is counted (OpenTelemetry:
// `keyguard.shadow.comparisons` by outcome, `keyguard.shadow.disagreements` by field); the
// request's answer never waits for, or changes by, it.

import type { Counter, Meter } from "@opentelemetry/api";
import type { KeyServiceClient } from "../client";
import type { CallOptions } from "../client/options";
import { createLogThrottle, type Logger } from "../logger";
import type { VerifyKeyRequest, VerifyKeyResult } from "../protocol/types";

/** The fields of a verification the shadow compares. */
export type ShadowField = "valid" | "code" | "permissions" | "roles" | "credits";

/** What one side answered, as compared (never the key). */
export interface ShadowAnswer {
  readonly valid: boolean;
  readonly code: string;
  readonly keyId: string | undefined;
  readonly permissions: readonly string[];
  readonly roles: readonly string[];
  /** Credits left after the verification; undefined when unlimited. */
  readonly credits: number | undefined;
}

/** One disagreement: the fields that differ and both answers. */
export interface ShadowDisagreement {
  readonly fields: readonly ShadowField[];
  /** The answer the request was decided by. */
  readonly primary: ShadowAnswer;
  /** The second service's answer. */
  readonly shadow: ShadowAnswer;
}

/** `onDisagreement(report, req)`: called after the request was answered; its return value is ignored. */
export type ShadowHandler<Req> = (report: ShadowDisagreement, req: Req) => void;

/** `shadow`: a second key service every sampled verification is also sent to, for comparison. */
export interface ShadowOptions<Req> {
  /** Base URL of the second service. Required unless `client`. */
  baseUrl?: string;
  /** Root key of the second service (`verify_key`). Required unless `client`. */
  rootKey?: string;
  /** A client for the second service, built with `createClient()`; replaces `baseUrl` and `rootKey`. */
  client?: KeyServiceClient;
  /**
   * Share of the verifications the key service answered (not those answered from the cache) that
   * are also sent to the second service, 0..1. Each one charges the second service as the first
   * (the same cost and rate limits), so credits can be compared. Default 0.1.
   */
  sample?: number;
  /** Receives each disagreement (after the request was answered). A throw is logged. Default: none. */
  onDisagreement?: ShadowHandler<Req>;
}

export interface ShadowSettings<Req> {
  readonly client: KeyServiceClient;
  readonly sample: number;
  readonly onDisagreement: ShadowHandler<Req> | undefined;
  readonly callOptions: CallOptions;
  readonly logger: Logger;
  /** keyguard's meter (apiKeyAuth's `telemetry`), asked for at the first comparison; undefined: not counted. */
  readonly meter: (() => Promise<Meter | undefined>) | undefined;
  /** Math.random, replaced in tests. */
  readonly random?: () => number;
}

export interface Shadow<Req> {
  /** Maybe (sampled) sends the same verification to the second service, later; returns at once. */
  observe(body: VerifyKeyRequest, primary: Readonly<VerifyKeyResult>, req: Req): void;
}

const sorted = (list: readonly string[] | undefined): readonly string[] => [...(list ?? [])].sort();

function answerOf(result: Readonly<VerifyKeyResult>): ShadowAnswer {
  return Object.freeze({
    valid: result.valid,
    code: result.code,
    keyId: result.keyId,
    permissions: sorted(result.permissions),
    roles: sorted(result.roles),
    credits: result.credits,
  });
}

/** The fields in which two answers differ (lists compared as sets). */
function differences(a: ShadowAnswer, b: ShadowAnswer): ShadowField[] {
  const out: ShadowField[] = [];
  if (a.valid !== b.valid) out.push("valid");
  if (a.code !== b.code) out.push("code");
  if (a.permissions.join("\n") !== b.permissions.join("\n")) out.push("permissions");
  if (a.roles.join("\n") !== b.roles.join("\n")) out.push("roles");
  if (a.credits !== b.credits) out.push("credits");
  return out;
}

/** The comparisons' outcomes as counted. */
type ShadowOutcome = "agreed" | "disagreed" | "failed";

interface ShadowCounters {
  readonly comparisons: Counter;
  readonly disagreements: Counter;
}

export function createShadow<Req>(settings: ShadowSettings<Req>): Shadow<Req> {
  const { client, logger, callOptions } = settings;
  const random = settings.random ?? Math.random;
  const throttle = createLogThrottle();
  let counters: Promise<ShadowCounters | undefined> | undefined;

  /** Counts one comparison (and each field of a disagreement) when telemetry is on; a meter that throws changes nothing. */
  async function count(outcome: ShadowOutcome, fields: readonly ShadowField[] = []): Promise<void> {
    if (settings.meter === undefined) return;
    counters ??= settings.meter().then((meter) =>
      meter === undefined
        ? undefined
        : {
            comparisons: meter.createCounter("keyguard.shadow.comparisons", {
              description: "Verifications also sent to the shadow key service, by outcome (agreed, disagreed, failed).",
            }),
            disagreements: meter.createCounter("keyguard.shadow.disagreements", {
              description: "Fields in which the shadow key service disagreed (valid, code, permissions, roles, credits).",
            }),
          },
    );
    try {
      const c = await counters;
      c?.comparisons.add(1, { "keyguard.shadow.outcome": outcome });
      for (const field of fields) c?.disagreements.add(1, { "keyguard.shadow.field": field });
    } catch (e) {
      logger.error(
        { error: e instanceof Error ? e.name : typeof e },
        "apiKeyAuth: the OpenTelemetry meter threw; shadow counts are incomplete",
      );
    }
  }

  async function compare(body: VerifyKeyRequest, primary: Readonly<VerifyKeyResult>, req: Req): Promise<void> {
    let second: Readonly<VerifyKeyResult>;
    try {
      second = await client.keys.verifyKey(body, callOptions);
    } catch (e) {
      await count("failed");
      const t = throttle("failure");
      if (t.log) {
        const code = (e as { code?: unknown } | null)?.code;
        logger.warn({ code, suppressedSinceLastLog: t.suppressed }, "apiKeyAuth: the shadow key service could not be asked; not compared");
      }
      return;
    }
    const report = { primary: answerOf(primary), shadow: answerOf(second) };
    const fields = differences(report.primary, report.shadow);
    await count(fields.length === 0 ? "agreed" : "disagreed", fields);
    if (fields.length === 0) return;
    const t = throttle("disagreement");
    if (t.log) {
      logger.warn(
        {
          fields,
          keyId: report.primary.keyId,
          shadowKeyId: report.shadow.keyId,
          code: report.primary.code,
          shadowCode: report.shadow.code,
          suppressedSinceLastLog: t.suppressed,
        },
        "apiKeyAuth: the shadow key service disagrees",
      );
    }
    try {
      settings.onDisagreement?.(Object.freeze({ fields: Object.freeze(fields), ...report }), req);
    } catch (e) {
      logger.error({ error: e instanceof Error ? e.name : typeof e }, "apiKeyAuth: shadow onDisagreement threw");
    }
  }

  return {
    observe(body, primary, req) {
      if (settings.sample <= 0 || (settings.sample < 1 && random() >= settings.sample)) return;
      // After the answer: the request does not wait for the call to start, nor for its end.
      setTimeout(() => void compare(body, primary, req), 0);
    },
  };
}
