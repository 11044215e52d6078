// A root key's last use (`lastUsedAt` of rootKeys.listRootKeys), written without a write per
// request: an instance writes a root key's use when it has not written one for it in the last
// minute (of service time), beside keys' last uses (`StorageTx.markUsed`), never in the record, so
// that no write empties a fleet's record caches. The write is not awaited by the request.
import type { Logger } from "../../logger";
import type { StorageTx } from "../storage/seam";

/** A root key's use is written at most once per this many ms per instance. */
const ROOT_KEY_USE_EVERY_MS = 60_000;
/** Root keys remembered; past it the memory starts again (at worst, one more write per key). */
const REMEMBERED = 10_000;

export class RootKeyUses {
  /** Root key id → the use last written by this instance. */
  private readonly written = new Map<string, number>();

  constructor(
    private readonly store: StorageTx,
    private readonly logger: Logger,
  ) {}

  /** `rootKeyId` authenticated a request at `now`. */
  note(rootKeyId: string, now: number): void {
    const last = this.written.get(rootKeyId);
    if (last !== undefined && now >= last && now - last < ROOT_KEY_USE_EVERY_MS) return;
    if (last === undefined && this.written.size >= REMEMBERED) this.written.clear();
    this.written.set(rootKeyId, now);
    this.store.markUsed(new Map([[rootKeyId, now]])).catch((err: unknown) => {
      // Forgotten, so the next request tries again.
      if (this.written.get(rootKeyId) === now) this.written.delete(rootKeyId);
      this.logger.warn({ rootKeyId }, `keyguard/server: a root key's last use was not written: ${(err as Error).message}`);
    });
  }
}
