// CountersClient: Increment over HTTP with the retry table of docs/api.md, and the counter documents
// (roll-ups, top lists) read with the Firebase JS SDK. How to use it: docs/web-client.md.
import { doc, getDoc, onSnapshot } from 'firebase/firestore';
import { IncrementNotAppliedError, IncrementRefusedError, IncrementUnknownOutcomeError } from './errors.js';
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

const sleep = (ms, signal) => new Promise((resolve, reject) => {
  if (signal?.aborted) return reject(signal.reason);
  const timer = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason); }, { once: true });
});

/** Milliseconds a Retry-After header asks to wait (seconds or an HTTP date), null when absent or unreadable. */
function retryAfterMs(header) {
  if (header == null) return null;
  if (/^\s*\d+\s*$/.test(header)) return Number(header) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

export class CountersClient {
  /** @param {import('./index').CountersClientOptions} options */
  constructor({
    incrementURL, idToken, appCheckToken, maxAttempts = 6, backoffMs = 500, maxWaitMs = 30_000,
    attemptTimeoutMs = 30_000, maxPendingMs = 10_000, rollupsCollection = 'rollups', topsCollection = 'tops',
    fetch = globalThis.fetch.bind(globalThis),
  }) {
    if (!incrementURL) throw new TypeError('incrementURL is required: the Increment function\'s URL (or a same-origin path to it)');
    if (!(maxAttempts >= 1)) throw new RangeError(`maxAttempts must be at least 1, got ${maxAttempts}`);
    Object.assign(this, { incrementURL, maxAttempts, backoffMs, maxWaitMs, attemptTimeoutMs, maxPendingMs, rollupsCollection, topsCollection });
    this.#idToken = idToken;
    this.#appCheckToken = appCheckToken;
    this.#fetch = fetch;
  }

  #idToken;
  #appCheckToken;
  #fetch;
  /** @type {Map<string, Set<{live: LiveCounter, changed: () => void, expireLater: () => void}>>} */
  #listeners = new Map();

  /**
   * Adds delta (default 1) to counter, or counts member once in a distinct counter, once per key
   * (a UUID made here when none is given). 503 and 429 are resent after Retry-After; an unknown
   * outcome (504, a network error, a lost or unreadable answer, a 5xx that does not say
   * "not_applied") is resent with the same key; at most maxAttempts requests in all. Resolves to the
   * API's answer with key, replayed and attempts; rejects with IncrementRefusedError (4xx),
   * IncrementNotAppliedError or IncrementUnknownOutcomeError.
   * @param {string} counter
   * @param {import('./index').IncrementOptions} [options]
   * @returns {Promise<import('./index').IncrementAnswer>}
   */
  async increment(counter, { delta, member, key = crypto.randomUUID(), signal } = {}) {
    signal?.throwIfAborted(); // nothing sent
    const body = { counter };
    if (delta !== undefined) body.delta = delta;
    if (member !== undefined) body.member = member;
    const shown = [...(this.#listeners.get(counter) ?? [])].map((l) => ({ l, entry: l.live.begin(member !== undefined ? 1 : (delta ?? 1)) }));
    shown.forEach(({ l }) => l.changed());
    try {
      const answer = await this.#send(body, key, signal);
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

  async #send(body, key, signal) {
    let unknown = false; // an attempt may have applied: the increment's outcome is unknown unless one answers
    let failures = 0;
    for (let attempts = 1; ; attempts++) {
      const r = await this.#attempt(body, key, signal);
      const details = { status: r.status, key, attempts, cause: r.cause };
      if (r.kind === 'ok') return { ...r.answer, key, replayed: r.replayed, attempts };
      if (r.kind === 'refused') throw new IncrementRefusedError(r.status, r.answer, { key, attempts });
      unknown ||= r.kind === 'unknown';
      if (attempts >= this.maxAttempts || signal?.aborted) {
        const what = r.status ? `HTTP ${r.status}` : `no answer (${r.cause})`;
        if (unknown) throw new IncrementUnknownOutcomeError(`Increment outcome unknown after ${attempts} attempts (last: ${what}): resend only with Idempotency-Key ${key}`, details);
        throw new IncrementNotAppliedError(`Increment not applied after ${attempts} attempts (last: ${what}): the service is busy, try again later`, details);
      }
      failures++;
      const wait = r.retryAfterMs ?? this.backoffMs * 2 ** (failures - 1);
      try {
        await sleep(Math.min(wait, this.maxWaitMs), signal);
      } catch (cause) {
        if (unknown) throw new IncrementUnknownOutcomeError(`Increment aborted with its outcome unknown: resend only with Idempotency-Key ${key}`, { ...details, cause });
        throw new IncrementNotAppliedError('Increment aborted, not applied', { ...details, cause });
      }
    }
  }

  /** One request: what its answer says about the increment. */
  async #attempt(body, key, signal) {
    const headers = { 'Content-Type': 'application/json', 'Idempotency-Key': key };
    const idToken = await this.#idToken?.();
    if (idToken) headers.Authorization = `Bearer ${idToken}`;
    const appCheckToken = await this.#appCheckToken?.();
    if (appCheckToken) headers['X-Firebase-AppCheck'] = appCheckToken;
    const timeout = AbortSignal.timeout(this.attemptTimeoutMs);
    let resp;
    try {
      resp = await this.#fetch(this.incrementURL, {
        method: 'POST', headers, body: JSON.stringify(body), signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (cause) {
      return { kind: 'unknown', cause }; // no answer
    }
    const status = resp.status;
    if (status === 503 || status === 429) return { kind: 'retry', status, retryAfterMs: retryAfterMs(resp.headers.get('Retry-After')) };
    let answer = null;
    try {
      answer = await resp.json();
    } catch (cause) {
      if (resp.ok) return { kind: 'unknown', status, cause }; // the answer was lost on the way
    }
    if (resp.ok) return { kind: 'ok', status, answer, replayed: resp.headers.get('Idempotent-Replayed') === 'true' };
    if (status < 500) return { kind: 'refused', status, answer: answer ?? {} };
    return { kind: answer?.outcome === 'not_applied' ? 'retry' : 'unknown', status };
  }

  /**
   * Listens to counter's roll-up and calls onChange with the value to show: the roll-up's count plus
   * this client's increments of counter that it does not hold yet, never counted twice. Returns the
   * function that stops listening.
   * @param {import('firebase/firestore').Firestore} db
   * @param {string} counter
   * @param {(change: import('./index').LiveCountChange) => void} onChange
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
    const unsubscribe = onSnapshot(doc(db, this.rollupsCollection, counter), (snap) => {
      error = null;
      if (snap.exists()) {
        const data = snap.data();
        live.applyRollup(Number(data.count), timestampMicros(data.updated_at));
        rollup = { updatedAt: dateOf(data.updated_at), windows: data.windows ?? {} };
      }
      changed();
    }, (err) => {
      error = err;
      changed();
    });
    return () => {
      unsubscribe();
      timers.forEach(clearTimeout);
      this.#listeners.get(counter)?.delete(listener);
    };
  }

  /**
   * Reads counter's count in the current UTC bucket of window from its roll-up document (one
   * document read): 0 when the roll-up's bucket is older (nothing counted since) or there is none.
   * @returns {Promise<import('./index').WindowCount>}
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
   * @returns {Promise<import('./index').TopList>}
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
