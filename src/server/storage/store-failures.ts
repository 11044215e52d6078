// Storage failures as the service answers and logs them: `StoreUnavailableError` (told apart by its
// `code`) becomes a 503 with `Retry-After: 1`; each kind of failure is logged at most once every
// 10 s, with how many requests it failed since its last line.
import type { Logger } from "../../logger";
import { ServiceError } from "../errors";

/** Minimum time between two log lines of the same failure kind. */
const STORE_FAILURE_LOG_EVERY_MS = 10_000;

/** Whether `err` says the store cannot serve now (any copy of `StoreUnavailableError`). */
export function isStoreUnavailable(err: unknown): err is Error {
  return err instanceof Error && (err as { code?: unknown }).code === "STORE_UNAVAILABLE";
}

export function storeUnavailableAnswer(): ServiceError {
  return new ServiceError("application.service_unavailable", "The key service's storage is unavailable. Please retry shortly.", {
    headers: { "Retry-After": "1" },
  });
}

/** Logs store failures, throttled per kind (the error's message). */
export class StoreFailureLog {
  private readonly kinds = new Map<string, { loggedAt: number; missed: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly storeKind: string,
    /** Wall clock in ms (not the service clock: throttling is about log volume). */
    private readonly clock: () => number = () => performance.now(),
  ) {}

  report(err: Error): void {
    const kind = err.message;
    const now = this.clock();
    const seen = this.kinds.get(kind);
    if (seen && now - seen.loggedAt < STORE_FAILURE_LOG_EVERY_MS) {
      seen.missed++;
      return;
    }
    const fields: Record<string, unknown> = { store: this.storeKind, error: kind };
    if (seen && seen.missed > 0) fields.failuresSinceLastLine = seen.missed;
    // Bounded: failure kinds are few; forget them all if something floods the map.
    if (!seen && this.kinds.size >= 100) this.kinds.clear();
    this.kinds.set(kind, { loggedAt: now, missed: 0 });
    this.logger.error(fields, "keyguard/server: the store is unavailable; answering 503 service_unavailable");
  }
}
