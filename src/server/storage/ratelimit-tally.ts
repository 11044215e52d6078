// The outcomes of ratelimit.limit counted in memory, per workspace, namespace, hour and outcome,
// until the verification events' next write (./verification-events.ts) adds them to the store. A
// call only bumps a number: it never waits for the store. Counts the store cannot take are kept for
// the next write.
import type { RatelimitCount } from "../records";

const HOUR_MS = 3_600_000;
/** Rows kept while the store cannot take them; past that, new rows are dropped (and counted). */
const MAX_ROWS = 100_000;

export class RatelimitTally {
  private rows = new Map<string, RatelimitCount>();
  /** Outcomes dropped since the last report (more than MAX_ROWS rows waiting). */
  private dropped = 0;

  /** Counts one outcome of ratelimit.limit at `time` (the service clock). */
  note(workspaceId: string, namespaceId: string, time: number, passed: boolean): void {
    const hour = Math.floor(time / HOUR_MS) * HOUR_MS;
    const id = `${workspaceId}\u0000${namespaceId}\u0000${hour}`;
    let row = this.rows.get(id);
    if (row === undefined) {
      if (this.rows.size >= MAX_ROWS) return void this.dropped++;
      row = { workspaceId, namespaceId, hour, passed: 0, limited: 0 };
      this.rows.set(id, row);
    }
    if (passed) row.passed++;
    else row.limited++;
  }

  /** Rows waiting to be written. */
  get size(): number {
    return this.rows.size;
  }

  /** Takes every row out, to be written; `restore` puts them back when the store did not take them. */
  take(): RatelimitCount[] {
    const rows = [...this.rows.values()];
    this.rows = new Map();
    return rows;
  }

  /** Puts rows the store did not take back, added to those counted meanwhile. */
  restore(rows: readonly RatelimitCount[]): void {
    for (const r of rows) {
      const id = `${r.workspaceId}\u0000${r.namespaceId}\u0000${r.hour}`;
      const row = this.rows.get(id);
      if (row !== undefined) {
        row.passed += r.passed;
        row.limited += r.limited;
      } else if (this.rows.size < MAX_ROWS) this.rows.set(id, { ...r });
      else this.dropped += r.passed + r.limited;
    }
  }

  /** Outcomes dropped since the last call, and forgets them. */
  takeDropped(): number {
    const n = this.dropped;
    this.dropped = 0;
    return n;
  }

  /** Forgets every row (a close whose store could not take them): how many outcomes. */
  clear(): number {
    let n = 0;
    for (const r of this.rows.values()) n += r.passed + r.limited;
    this.rows = new Map();
    return n;
  }
}
