// The audit log's retention: the records older than the retention are deleted when the service
// starts and every hour after, off the requests' path. A sweep that fails is reported and retried
// at the next one; nothing else depends on it.
import type { Logger } from "../../logger";
import type { Storage } from "./seam";
import { isStoreUnavailable, type StoreFailureLog } from "./store-failures";

const SWEEP_EVERY_MS = 60 * 60 * 1000;

export class AuditRetention {
  private readonly timer: NodeJS.Timeout;
  private running: Promise<number> | undefined;

  constructor(
    private readonly store: Storage,
    private readonly retentionMs: number,
    private readonly now: () => number,
    private readonly logger: Logger,
    private readonly failures: StoreFailureLog,
  ) {
    void this.sweep();
    this.timer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  /** Deletes the records older than the retention (one sweep at a time); returns how many. Never rejects. */
  sweep(): Promise<number> {
    this.running ??= this.store
      .deleteAuditBefore(this.now() - this.retentionMs)
      .catch((err: unknown) => {
        if (isStoreUnavailable(err)) this.failures.report(err);
        else
          this.logger.error(
            { store: this.store.kind, error: err instanceof Error ? err.message : String(err) },
            "keyguard/server: cannot delete expired audit records",
          );
        return 0;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  /** Stops the timer and waits for a sweep under way (before the store closes). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
