// Delivers the webhook outbox: every DISPATCH_EVERY_MS (and at once after a change that put
// messages in it: `tick`) it runs the key.expiring scan when due, then takes the messages due (a lease keeps
// other instances off them), tries each once, and writes back the outcome. A failed attempt is
// retried with exponential backoff (RETRY_BASE_MS doubling, at most MAX_BACKOFF_MS apart) until the
// message is older than the retry window (counted from when an operator last resent it, if they
// did, or its endpoint was last resumed), then marked failed. At least once: a crash between the
// endpoint's answer and the write-back delivers the message again after the lease (`webhookLeaseSeconds`), same id. A
// message of a paused endpoint is kept, not tried: held for PAUSED_HOLD_MS, or until the endpoint
// is resumed (which makes its pending messages due at once).
import type { Logger } from "../../logger";
import type { Storage } from "../storage/seam";
import type { WebhookAttemptRecord, WebhookMessage } from "../records";
import { isStoreUnavailable, type StoreFailureLog } from "../storage/store-failures";
import { deliver } from "./deliver";
import { newId } from "../domain/ids";
import { readEndpoints, signingSecrets, writeEndpoints } from "./endpoints";
import type { KeyVault } from "../domain/key-vault";
import type { ExpiryNotices } from "./expiry-notices";

const DISPATCH_EVERY_MS = 500;
const BATCH = 20;
const TIMEOUT_MS = 10_000;
const RETRY_BASE_MS = 5_000;
const MAX_BACKOFF_MS = 60 * 60 * 1000;
/** How long a message of a paused endpoint is held before it is looked at again (resuming makes it due at once). */
const PAUSED_HOLD_MS = 60 * 60 * 1000;
/** Attempts a message keeps in its history (the latest). */
const MAX_ATTEMPT_HISTORY = 50;

export interface DispatcherOptions {
  allowPrivate: boolean;
  /** Opens the endpoints' sealed signing secrets. */
  vault: KeyVault | undefined;
  /** How long a message is retried, ms (from its creation). */
  retryWindowMs: number;
  /** How long a message taken for delivery is kept from the other instances, ms (longer than TIMEOUT_MS). */
  leaseMs: number;
  now: () => number;
  logger: Logger;
  failures: StoreFailureLog;
  /** The key.expiring scan, run at the start of a pass when due: its messages are delivered in the same pass. */
  expiryNotices?: ExpiryNotices;
}

/** When a message that failed `attempts` times is due again. */
function nextAttempt(attempts: number, now: number): number {
  return now + Math.min(MAX_BACKOFF_MS, RETRY_BASE_MS * 2 ** Math.max(0, attempts - 1));
}

export class WebhookDispatcher {
  private readonly timer: NodeJS.Timeout;
  private running: Promise<void> | undefined;
  /** A tick asked for while a pass ran: the pass that follows it at once (those callers wait for it). */
  private again: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly store: Storage,
    private readonly options: DispatcherOptions,
  ) {
    this.timer = setInterval(() => void this.tick(), DISPATCH_EVERY_MS);
    this.timer.unref();
  }

  /** One pass (one at a time; asked for during one, another follows): takes the messages due and tries each. Never rejects. */
  tick(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.running) {
      // The pass under way may have claimed before the caller's messages were due: the caller
      // waits for the one that follows it.
      return (this.again ??= this.running.then(() => {
        this.again = undefined;
        return this.tick();
      }));
    }
    this.running = this.pass()
      .catch((err: unknown) => {
        if (isStoreUnavailable(err)) this.options.failures.report(err);
        else this.options.logger.error({ error: (err as Error).message }, "keyguard/server: webhook delivery pass failed");
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  private async pass(): Promise<void> {
    await this.options.expiryNotices?.scanIfDue();
    const due = await this.store.claimWebhooks(this.options.now(), BATCH, this.options.leaseMs);
    await Promise.all(due.map((m) => this.attempt(m)));
  }

  private async attempt(message: WebhookMessage): Promise<void> {
    const endpoint = (await readEndpoints(this.store.direct, message.workspaceId)).find((e) => e.id === message.endpointId);
    const { now } = this.options;
    if (!endpoint) return this.store.settleWebhook({ ...message, status: "failed", lastError: "the endpoint was deleted" });
    if (endpoint.disabledAt !== undefined)
      return this.store.settleWebhook({ ...message, status: "failed", lastError: "the endpoint is disabled" });
    if (endpoint.pausedAt !== undefined) return this.hold(message);
    const started = now();
    const secrets = signingSecrets(endpoint, this.options.vault, started);
    const result =
      secrets === undefined
        ? {
            status: 0,
            error: "the endpoint's signing secret cannot be opened: the service's encryption key is not the one it was sealed with",
            latencyMs: 0,
          }
        : await deliver({ url: endpoint.url, secrets }, message, { allowPrivate: this.options.allowPrivate, timeoutMs: TIMEOUT_MS });
    const attempts = message.attempts + 1;
    const record: WebhookAttemptRecord = {
      time: started,
      status: result.status,
      ...(result.error === undefined ? {} : { error: result.error }),
      durationMs: result.latencyMs,
    };
    const history = [...(message.history ?? []), record].slice(-MAX_ATTEMPT_HISTORY);
    const settled: WebhookMessage = { ...message, attempts, lastStatus: result.status, lastLatencyMs: result.latencyMs, history };
    delete settled.lastError;
    if (result.error === undefined) {
      await this.store.settleWebhook({ ...settled, status: "delivered", deliveredAt: now() });
      return;
    }
    settled.lastError = result.error;
    const next = nextAttempt(attempts, now());
    const windowStart = Math.max(message.resentAt ?? message.createdAt, endpoint.resumedAt ?? 0);
    if (next - windowStart > this.options.retryWindowMs) {
      this.options.logger.warn(
        { messageId: message.id, endpointId: endpoint.id, attempts, error: result.error },
        "keyguard/server: webhook message failed",
      );
      await this.store.settleWebhook({ ...settled, status: "failed" });
      await this.disable(endpoint.id, message);
    } else {
      await this.store.settleWebhook({ ...settled, nextAttemptAt: next });
    }
  }

  /**
   * Keeps a message of a paused endpoint without trying it. Written back first, then the endpoint
   * read again: if it was resumed meanwhile, the message is due at once (the resume's own
   * rescheduling may have run before this write).
   */
  private async hold(message: WebhookMessage): Promise<void> {
    await this.store.settleWebhook({ ...message, nextAttemptAt: this.options.now() + PAUSED_HOLD_MS });
    const endpoint = (await readEndpoints(this.store.direct, message.workspaceId)).find((e) => e.id === message.endpointId);
    if (endpoint?.pausedAt === undefined) await this.store.settleWebhook({ ...message, nextAttemptAt: this.options.now() });
  }

  /**
   * Disables an endpoint that failed a message for its whole retry window, with an audit record
   * (the actor is the service itself), in one transaction.
   */
  private async disable(endpointId: string, message: WebhookMessage): Promise<void> {
    const now = this.options.now();
    await this.store.transaction(async (tx) => {
      const endpoints = await readEndpoints(tx, message.workspaceId);
      const endpoint = endpoints.find((e) => e.id === endpointId);
      if (!endpoint || endpoint.disabledAt !== undefined) return;
      endpoint.disabledAt = now;
      await writeEndpoints(tx, message.workspaceId, endpoints);
      await tx.appendAudit({
        id: newId("aud"),
        time: now,
        workspaceId: message.workspaceId,
        actorId: "keyguard-webhooks",
        actorName: "webhook delivery",
        operation: "webhooks.disableEndpoint",
        targets: [endpointId, message.id],
        outcome: "success",
        requestId: message.id,
        ip: "",
        change: { reason: "a message failed for the whole retry window", messageId: message.id, lastError: message.lastError ?? null },
      });
    });
  }

  /** Stops the timer and waits for a pass under way (before the store closes). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.running;
  }
}
