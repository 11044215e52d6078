// key.expiring: a scan, at most every SCAN_EVERY_MS of service time (run from the dispatcher's
// passes), takes the keys that expire within the notice and were not noticed for their current
// expiry, and writes their events to the outbox in the same transaction as the mark that says the
// notice was sent (`StorageTx.claimExpiryNotices`). Once per key and expiry value, however many
// instances scan: a changed `expires` arms the notice again; a key that already expired is not noticed.
import type { ExpiringEventData } from "../../protocol/contract/webhook-payloads";
import type { Storage } from "../storage/seam";
import { KEY_EXPIRING, type WebhookEvent } from "./events";
import { enqueueNoticed } from "./noticed";

/** How often a scan runs, in service time. */
const SCAN_EVERY_MS = 60_000;
/** Keys taken per transaction. */
const BATCH = 100;

export class ExpiryNotices {
  /** The first scan is a period after start: a service started and stopped at once (a test, a CLI run) never scans. */
  private lastScan: number;

  constructor(
    private readonly store: Storage,
    /** How long before its expiry a key is noticed, ms. */
    private readonly noticeMs: number,
    private readonly now: () => number,
  ) {
    this.lastScan = now();
  }

  /** Scans when the last scan is SCAN_EVERY_MS old (or the clock went back); returns how many messages it queued. */
  async scanIfDue(): Promise<number> {
    const now = this.now();
    if (now >= this.lastScan && now - this.lastScan < SCAN_EVERY_MS) return 0;
    // Marked before scanning: a scan that fails is tried again a period later, not at every pass.
    this.lastScan = now;
    let queued = 0;
    for (;;) {
      const { taken, messages } = await this.store.transaction(async (tx) => {
        const keys = await tx.claimExpiryNotices(now, now + this.noticeMs, BATCH);
        const events: WebhookEvent[] = keys.map((k) => {
          const data: ExpiringEventData = { workspaceId: k.workspaceId, keyId: k.keyId, apiId: k.apiId, expires: k.expires };
          return { type: KEY_EXPIRING, workspaceId: k.workspaceId, time: now, data };
        });
        return { taken: keys.length, messages: await enqueueNoticed(tx, events) };
      });
      queued += messages;
      if (taken < BATCH) return queued;
    }
  }
}
