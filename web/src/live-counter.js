// LiveCounter is what a like button shows: the counter's roll-up (rollups/{id}, read with a snapshot
// listener) plus this user's own increments that the roll-up does not include yet, so a click shows
// at once and is never counted twice.
//
// When does the roll-up include an increment? Increment answers with received_at, when the function
// received it, before its write; a roll-up's updated_at is when its sum was computed. An answered
// increment stops showing as pending once a roll-up with updated_at later than its received_at is
// seen: from then on only the roll-up counts it, so it is never shown twice. Such a roll-up includes
// the increment unless it was computed while the write was still waiting (at most a group-commit
// interval): then the like is briefly not shown, and comes back with the roll-up that its own write
// triggers (the engine recomputes after every shard write). As a last resort, an answered increment
// that no roll-up settled within maxPendingMs stops showing as pending.

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
    /** @type {{delta: number, receivedAtMicros: number | null, answeredAtMs: number | null}[]} */
    this.pending = [];
  }

  /** A roll-up snapshot arrived: it replaces the last one and settles the increments it covers. */
  applyRollup(count, updatedAtMicros) {
    this.rollup = { count, updatedAtMicros };
    this.pending = this.pending.filter((p) => !this.#covered(p));
  }

  /** The user clicked: the increment shows at once, as pending. Returns its entry. */
  begin(delta) {
    const entry = { delta, receivedAtMicros: null, answeredAtMs: null };
    this.pending.push(entry);
    return entry;
  }

  /** Increment answered 200 with received_at (RFC 3339); counted false means nothing was added. */
  acknowledge(entry, receivedAt, counted = true, nowMs = Date.now()) {
    if (!counted) {
      this.fail(entry);
      return;
    }
    entry.receivedAtMicros = rfc3339Micros(receivedAt);
    entry.answeredAtMs = nowMs;
    if (this.#covered(entry)) this.fail(entry);
  }

  /** The increment failed or was not counted: it no longer shows. */
  fail(entry) {
    this.pending = this.pending.filter((p) => p !== entry);
  }

  /** Drops answered increments that no roll-up settled within maxPendingMs. */
  expire(nowMs = Date.now()) {
    this.pending = this.pending.filter((p) => p.answeredAtMs === null || nowMs - p.answeredAtMs < this.maxPendingMs);
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
    return entry.receivedAtMicros !== null && this.rollup !== null && this.rollup.updatedAtMicros > entry.receivedAtMicros;
  }
}
