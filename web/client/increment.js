// IncrementClient: Increment over HTTP with the retry table of docs/api.md, and nothing else: this
// module loads no Firebase SDK (import it from '@shardcount/counters-client/increment' on pages that
// only count). How to use it: docs/web-client.md.
import { IncrementNotAppliedError, IncrementRefusedError, IncrementUnknownOutcomeError } from './errors.js';

export { IncrementError, IncrementNotAppliedError, IncrementRefusedError, IncrementUnknownOutcomeError } from './errors.js';

/**
 * The waits between attempts, the Go client's (client.FirstBackoff, MaxBackoff, MaxRetryAfter):
 * after the n-th attempt without Retry-After, a random wait in [0, min(backoffMs·2^(n-1),
 * maxBackoffMs)] (full jitter); after a Retry-After, its wait, at most maxWaitMs.
 */
export const RETRY_DEFAULTS = Object.freeze({ backoffMs: 250, maxBackoffMs: 10_000, maxWaitMs: 30_000 });

/** Waits ms, or rejects with signal's reason when it aborts. */
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

export class IncrementClient {
  /** @param {import('./increment').IncrementClientOptions} options */
  constructor({
    incrementURL, idToken, appCheckToken, maxAttempts = 6, backoffMs = RETRY_DEFAULTS.backoffMs,
    maxBackoffMs = RETRY_DEFAULTS.maxBackoffMs, maxWaitMs = RETRY_DEFAULTS.maxWaitMs, attemptTimeoutMs = 30_000,
    fetch = globalThis.fetch.bind(globalThis), wait = sleep,
  }) {
    if (!incrementURL) throw new TypeError('incrementURL is required: the Increment function\'s URL (or a same-origin path to it)');
    if (!(maxAttempts >= 1)) throw new RangeError(`maxAttempts must be at least 1, got ${maxAttempts}`);
    Object.assign(this, { incrementURL, maxAttempts, backoffMs, maxBackoffMs, maxWaitMs, attemptTimeoutMs });
    this.#idToken = idToken;
    this.#appCheckToken = appCheckToken;
    this.#fetch = fetch;
    this.#wait = wait;
  }

  #idToken;
  #appCheckToken;
  #fetch;
  #wait;

  /**
   * Adds delta (default 1) to counter, or counts member once in a distinct counter, once per key
   * (a UUID made here when none is given). 503, 429 and a 5xx saying "not_applied" are resent; an
   * unknown outcome (504, a network error, a lost or unreadable answer, any other 5xx) is resent
   * with the same key; at most maxAttempts requests in all, waiting Retry-After (at most maxWaitMs)
   * or a full-jitter backoff between them. Resolves to the API's answer with key, replayed and
   * attempts; rejects with IncrementRefusedError (4xx), IncrementNotAppliedError or
   * IncrementUnknownOutcomeError (any attempt may have applied).
   * @param {string} counter
   * @param {import('./increment').IncrementOptions} [options]
   * @returns {Promise<import('./increment').IncrementAnswer>}
   */
  async increment(counter, { delta, member, key = crypto.randomUUID(), signal } = {}) {
    signal?.throwIfAborted(); // nothing sent
    const body = { counter };
    if (delta !== undefined) body.delta = delta;
    if (member !== undefined) body.member = member;
    let unknown = false; // an attempt may have applied: the increment's outcome is unknown unless one answers
    for (let attempts = 1; ; attempts++) {
      const r = await this.#attempt(body, key, signal);
      const details = { status: r.status, key, attempts, cause: r.cause };
      if (r.kind === 'ok') return { ...r.answer, key, replayed: r.replayed, attempts };
      if (r.kind === 'refused') {
        const refusal = new IncrementRefusedError(r.status, r.answer, { key, attempts });
        if (!unknown) throw refusal;
        // A refusal now says nothing of an earlier attempt whose outcome was unknown.
        throw new IncrementUnknownOutcomeError(`Increment outcome unknown: an earlier attempt may have applied, then HTTP ${r.status}: resend only with Idempotency-Key ${key}`,
          { ...details, cause: refusal });
      }
      unknown ||= r.kind === 'unknown';
      if (attempts >= this.maxAttempts || signal?.aborted) {
        const what = r.status ? `HTTP ${r.status}` : `no answer (${r.cause})`;
        if (unknown) throw new IncrementUnknownOutcomeError(`Increment outcome unknown after ${attempts} attempts (last: ${what}): resend only with Idempotency-Key ${key}`, details);
        throw new IncrementNotAppliedError(`Increment not applied after ${attempts} attempts (last: ${what}): the service is busy, try again later`, details);
      }
      const wait = r.retryAfterMs != null
        ? Math.min(r.retryAfterMs, this.maxWaitMs)
        : Math.random() * Math.min(this.backoffMs * 2 ** Math.min(attempts - 1, 30), this.maxBackoffMs);
      try {
        await this.#wait(wait, signal);
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
    const retryAfter = retryAfterMs(resp.headers.get('Retry-After'));
    if (status === 503 || status === 429) return { kind: 'retry', status, retryAfterMs: retryAfter };
    let answer = null;
    try {
      answer = await resp.json();
    } catch (cause) {
      if (resp.ok) return { kind: 'unknown', status, cause }; // the answer was lost on the way
    }
    if (resp.ok) return { kind: 'ok', status, answer, replayed: resp.headers.get('Idempotent-Replayed') === 'true' };
    if (status < 500) return { kind: 'refused', status, answer: answer ?? {} };
    return { kind: answer?.outcome === 'not_applied' ? 'retry' : 'unknown', status, retryAfterMs: retryAfter };
  }
}
