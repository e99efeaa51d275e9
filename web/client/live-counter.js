// LiveCounter is what liveCount shows: the counter's roll-up (rollups/{id}) plus this client's own
// increments that the roll-up does not include yet, so an increment shows at once and never twice.
// The rule and its limits are in docs/web-client.md ("Showing an increment at once").

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

/**
 * @typedef {object} PendingIncrement
 * @property {number} delta
 * @property {number} sentAfter roll-ups seen when it was sent
 * @property {boolean} answered
 * @property {number | null} receivedAtMicros the answer's received_at (null when it had none: a
 *   deployment older than keyed answers with received_at)
 * @property {number | null} answeredAtMs
 */

export class LiveCounter {
  /** @param {{maxPendingMs?: number}} [options] */
  constructor({ maxPendingMs = 10_000 } = {}) {
    this.maxPendingMs = maxPendingMs;
    /** @type {{count: number, updatedAtMicros: number} | null} */
    this.rollup = null;
    /** How many roll-ups were applied: tells which arrived after an increment was sent. */
    this.rollups = 0;
    /** @type {PendingIncrement[]} */
    this.pending = [];
  }

  /** A roll-up snapshot arrived: it replaces the last one and settles the increments it may cover. */
  applyRollup(count, updatedAtMicros) {
    this.rollup = { count, updatedAtMicros };
    this.rollups++;
    // An answer without received_at waited for this roll-up, the first after the answer.
    this.pending = this.pending.filter((p) => !this.#covered(p) && !(p.answered && p.receivedAtMicros === null));
  }

  /** An increment is sent: it shows at once, as pending. Returns its entry. */
  begin(delta) {
    const entry = { delta, sentAfter: this.rollups, answered: false, receivedAtMicros: null, answeredAtMs: null };
    this.pending.push(entry);
    return entry;
  }

  /**
   * Increment answered 200. receivedAt is the answer's received_at (RFC 3339; undefined from a
   * deployment older than keyed answers with it); counted false means nothing was added.
   */
  acknowledge(entry, receivedAt, counted = true, nowMs = Date.now()) {
    if (!counted || (receivedAt == null && this.#rollupSince(entry))) {
      // Not counted; or a roll-up that arrived in flight may hold it and nothing tells: the roll-up
      // (or the one its own write triggers) shows it.
      this.fail(entry);
      return;
    }
    entry.answered = true;
    entry.receivedAtMicros = receivedAt == null ? null : rfc3339Micros(receivedAt);
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

  /** The sum of this client's increments shown as pending: not in the roll-up, as far as it can tell. */
  get pendingDelta() {
    // One still in flight is hidden once a roll-up arrived after it was sent: that roll-up may hold it.
    return this.pending.reduce((sum, p) => (p.answered || !this.#rollupSince(p) ? sum + p.delta : sum), 0);
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

  #rollupSince(entry) {
    return this.rollups > entry.sentAfter;
  }

  #covered(entry) {
    return entry.receivedAtMicros !== null && this.rollup !== null && this.rollup.updatedAtMicros > entry.receivedAtMicros;
  }
}
