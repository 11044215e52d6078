// Refusing a signed secret-scanning report sent twice: the SHA-256 digests of the reports taken,
// remembered for a window (24 hours), at most 10,000 of them (the oldest forgotten first). Only
// reports whose signature held are remembered, so only the host can fill it. Per process.
import { createHash } from "node:crypto";

/** How long a report's digest is remembered. */
const REPLAY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** How many digests are remembered at most. */
const REPLAY_MEMORY = 10_000;

export class ReplayGuard {
  /** Digest → until when it is remembered (Unix ms); in the order taken, so the oldest come first. */
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly now: () => number,
    private readonly windowMs = REPLAY_WINDOW_MS,
    private readonly capacity = REPLAY_MEMORY,
  ) {}

  /** The digest of a report's raw body. */
  static digest(body: Buffer): string {
    return createHash("sha256").update(body).digest("base64");
  }

  /**
   * Takes a report: false when the same body was taken within the window (or is being handled now).
   * A report that then fails (the store is unavailable) is `release`d, so the host's retry is taken.
   */
  take(digest: string): boolean {
    const now = this.now();
    for (const [d, until] of this.seen) {
      if (until > now && this.seen.size < this.capacity) break;
      this.seen.delete(d);
    }
    const until = this.seen.get(digest);
    if (until !== undefined && until > now) return false;
    this.seen.set(digest, now + this.windowMs);
    return true;
  }

  /** Forgets a report taken but not handled. */
  release(digest: string): void {
    this.seen.delete(digest);
  }
}
