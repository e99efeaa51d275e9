// LiveCounter is what a like button shows: the counter's roll-up (rollups/{id}, read with a snapshot
// listener) plus this user's own increments that the roll-up does not include yet, so a click shows
// at once and is never counted twice.
//
// When does the roll-up include an increment? Increment answers with acknowledged_at, a time after
// its write committed; the roll-up's updated_at is when its sum was computed, and a sum computed after
// a commit includes it. So an acknowledged increment is dropped from "pending" as soon as a roll-up
// with updated_at later than its acknowledged_at is seen. The roll-up engine writes such a roll-up
// soon after every shard write (it recomputes unless the roll-up was computed at least 100 ms after
// the write). As a last resort, an acknowledged increment not covered after maxPendingMs is dropped:
// a brief undercount rather than a lasting double count.

/** Microseconds since the epoch of an RFC 3339 time with up to nanosecond digits. */
export function rfc3339Micros(text) {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(text);
  if (!m) throw new Error(`not an RFC 3339 time: ${text}`);
  const fraction = (m[2] ?? '').padEnd(6, '0').slice(0, 6);
  return Date.parse(m[1] + m[3]) * 1000 + Number(fraction);
}

/** Microseconds since the epoch of a Firestore Timestamp (seconds and nanoseconds). */
export function timestampMicros(ts) {
  return ts.seconds * 1e6 + Math.floor(ts.nanoseconds / 1000);
}

export class LiveCounter {
  /** @param {{maxPendingMs?: number}} [options] */
  constructor({ maxPendingMs = 10_000 } = {}) {
    this.maxPendingMs = maxPendingMs;
    /** @type {{count: number, updatedAtMicros: number} | null} */
    this.rollup = null;
    /** @type {{delta: number, ackedAtMicros: number | null, ackedAtMs: number | null}[]} */
    this.pending = [];
  }

  /** A roll-up snapshot arrived: it replaces the last one and settles the increments it covers. */
  applyRollup(count, updatedAtMicros) {
    this.rollup = { count, updatedAtMicros };
    this.pending = this.pending.filter((p) => !this.#covered(p));
  }

  /** The user clicked: the increment shows at once, as pending. Returns its entry. */
  begin(delta) {
    const entry = { delta, ackedAtMicros: null, ackedAtMs: null };
    this.pending.push(entry);
    return entry;
  }

  /** Increment answered 200 with acknowledged_at (RFC 3339); counted false means nothing was added. */
  acknowledge(entry, acknowledgedAt, counted = true, nowMs = Date.now()) {
    if (!counted) {
      this.fail(entry);
      return;
    }
    entry.ackedAtMicros = rfc3339Micros(acknowledgedAt);
    entry.ackedAtMs = nowMs;
    if (this.#covered(entry)) this.fail(entry);
  }

  /** The increment failed or was not counted: it no longer shows. */
  fail(entry) {
    this.pending = this.pending.filter((p) => p !== entry);
  }

  /** Drops acknowledged increments that no roll-up covered within maxPendingMs. */
  expire(nowMs = Date.now()) {
    this.pending = this.pending.filter((p) => p.ackedAtMs === null || nowMs - p.ackedAtMs < this.maxPendingMs);
  }

  /** The sum of this user's increments not yet in the roll-up. */
  get pendingDelta() {
    return this.pending.reduce((sum, p) => sum + p.delta, 0);
  }

  /** The value to show: the roll-up plus what is pending. */
  get value() {
    return (this.rollup?.count ?? 0) + this.pendingDelta;
  }

  /** Seconds since the roll-up was computed (null before the first one), never below zero. */
  ageSeconds(nowMs = Date.now()) {
    if (!this.rollup) return null;
    return Math.max(0, nowMs - this.rollup.updatedAtMicros / 1000) / 1000;
  }

  #covered(entry) {
    return entry.ackedAtMicros !== null && this.rollup !== null && this.rollup.updatedAtMicros > entry.ackedAtMicros;
  }
}
