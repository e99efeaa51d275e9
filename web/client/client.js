// CountersClient: IncrementClient (increment.js), plus the counter documents (roll-ups, top lists)
// read with the Firebase JS SDK. How to use it: docs/web-client.md.
import { doc, getDoc, onSnapshot } from 'firebase/firestore';
import { ListenTimeoutError } from './errors.js';
import { IncrementClient } from './increment.js';
import { LiveCounter, timestampMicros } from './live-counter.js';

const WINDOWS = ['hour', 'day', 'month'];

/** The label of the UTC bucket of window ('hour', 'day' or 'month') holding date: 2026-11-23T18, 2026-11-23, 2026-11. */
export function currentBucket(window, date = new Date()) {
  const iso = date.toISOString();
  switch (window) {
    case 'hour': return iso.slice(0, 13);
    case 'day': return iso.slice(0, 10);
    case 'month': return iso.slice(0, 7);
  }
  throw new RangeError(`window must be one of ${WINDOWS.join(', ')}, got ${JSON.stringify(window)}`);
}

/** The count of window in a roll-up's windows map now: its count when its bucket is the current one, else 0. */
export function windowCountOf(windows, window, date = new Date()) {
  const w = windows?.[window];
  return w && w.bucket === currentBucket(window, date) ? Number(w.count) : 0;
}

/** The Date of a Firestore Timestamp, or null. */
const dateOf = (ts) => (ts ? new Date(timestampMicros(ts) / 1000) : null);

export class CountersClient extends IncrementClient {
  /** @param {import('./index.js').CountersClientOptions} options */
  constructor({ maxPendingMs = 10_000, listenTimeoutMs = 10_000, rollupsCollection = 'rollups', topsCollection = 'tops', ...options }) {
    super(options);
    Object.assign(this, { maxPendingMs, listenTimeoutMs, rollupsCollection, topsCollection });
  }

  /** @type {Map<string, Set<{live: LiveCounter, changed: () => void, expireLater: () => void}>>} */
  #listeners = new Map();

  /**
   * IncrementClient's increment, also shown at once by this client's liveCount listeners of counter
   * (as pending until a roll-up holds it; no longer once it failed).
   * @param {string} counter
   * @param {import('./index.js').IncrementOptions} [options]
   * @returns {Promise<import('./index.js').IncrementAnswer>}
   */
  async increment(counter, options = {}) {
    options.signal?.throwIfAborted(); // nothing sent, nothing shown
    const { delta, member } = options;
    const shown = [...(this.#listeners.get(counter) ?? [])].map((l) => ({ l, entry: l.live.begin(member !== undefined ? 1 : (delta ?? 1)) }));
    shown.forEach(({ l }) => l.changed());
    try {
      const answer = await super.increment(counter, options);
      shown.forEach(({ l, entry }) => {
        l.live.acknowledge(entry, answer.received_at, answer.counted ?? true);
        l.expireLater();
        l.changed();
      });
      return answer;
    } catch (err) {
      shown.forEach(({ l, entry }) => { l.live.fail(entry); l.changed(); });
      throw err;
    }
  }

  /**
   * Listens to counter's roll-up and calls onChange with the value to show: the roll-up's count plus
   * this client's increments of counter that it does not hold yet, never counted twice. Returns the
   * function that stops listening. change.error is the listener's error (a refusal such as
   * permission-denied), or a ListenTimeoutError when no snapshot from the backend came within
   * listenTimeoutMs of the call, or of the SDK serving from its cache (offline, or a Firestore that
   * cannot be reached); a snapshot from the backend clears it.
   * @param {import('firebase/firestore').Firestore} db
   * @param {string} counter
   * @param {(change: import('./index.js').LiveCountChange) => void} onChange
   */
  liveCount(db, counter, onChange) {
    const live = new LiveCounter({ maxPendingMs: this.maxPendingMs });
    let rollup = null;
    let error = null;
    const timers = new Set();
    const changed = () => onChange({
      counter, value: live.value, pending: live.pendingDelta, rollup: rollup && { ...rollup, count: live.rollup.count }, error,
    });
    const expireLater = () => {
      const timer = setTimeout(() => { timers.delete(timer); live.expire(); changed(); }, this.maxPendingMs + 1);
      timers.add(timer);
    };
    const listener = { live, changed, expireLater };
    if (!this.#listeners.has(counter)) this.#listeners.set(counter, new Set());
    this.#listeners.get(counter).add(listener);
    // The SDK retries an unreachable backend silently, serving from its cache: a deadline makes that
    // an error.
    let deadline;
    const awaitBackend = () => {
      if (deadline !== undefined) return;
      deadline = setTimeout(() => {
        error = new ListenTimeoutError(counter, this.listenTimeoutMs);
        changed();
      }, this.listenTimeoutMs);
    };
    awaitBackend();
    const unsubscribe = onSnapshot(doc(db, this.rollupsCollection, counter), (snap) => {
      if (snap.metadata.fromCache) {
        awaitBackend();
      } else {
        clearTimeout(deadline);
        deadline = undefined;
        error = null;
      }
      if (snap.exists()) {
        const data = snap.data();
        live.applyRollup(Number(data.count), timestampMicros(data.updated_at));
        rollup = { updatedAt: dateOf(data.updated_at), windows: data.windows ?? {} };
      }
      changed();
    }, (err) => {
      clearTimeout(deadline);
      error = err;
      changed();
    });
    return () => {
      unsubscribe();
      clearTimeout(deadline);
      timers.forEach(clearTimeout);
      this.#listeners.get(counter)?.delete(listener);
    };
  }

  /**
   * Reads counter's count in the current UTC bucket of window from its roll-up document (one
   * document read): 0 when the roll-up's bucket is older (nothing counted since) or there is none.
   * @returns {Promise<import('./index.js').WindowCount>}
   */
  async windowCount(db, counter, window, now = new Date()) {
    const bucket = currentBucket(window, now);
    const snap = await getDoc(doc(db, this.rollupsCollection, counter));
    const data = snap.exists() ? snap.data() : {};
    return { counter, window, bucket, count: windowCountOf(data.windows, window, now), updatedAt: dateOf(data.updated_at) };
  }

  /**
   * Reads group's top list of window ('all' or a window) from its document (one document read):
   * at most limit (1..100) counters, highest first, of the list's bucket.
   * @returns {Promise<import('./index.js').TopList>}
   */
  async top(db, group, { window = 'all', limit = 10 } = {}) {
    if (window !== 'all') currentBucket(window); // checks the name
    if (!(Number.isInteger(limit) && limit >= 1 && limit <= 100)) throw new RangeError(`limit must be an integer in 1..100, got ${limit}`);
    const snap = await getDoc(doc(db, this.topsCollection, `${group}_${window}`));
    const data = snap.exists() ? snap.data() : {};
    return {
      group, window, bucket: data.bucket ?? '', updatedAt: dateOf(data.updated_at),
      top: (data.top ?? []).slice(0, limit).map(({ counter, count }) => ({ counter, count: Number(count) })),
    };
  }
}
