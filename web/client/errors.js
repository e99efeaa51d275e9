// The errors increment throws, and liveCount's deadline error. Each increment error says whether the
// increment counts: refused and not applied never count; an unknown outcome may, and is safe to send
// again only with its key.

/** Base class of increment's errors. */
export class IncrementError extends Error {
  name = 'IncrementError'; // spelled out: minifiers rename classes
  /** @param {string} message @param {{status?: number, key: string, attempts: number, cause?: unknown}} details */
  constructor(message, { status, key, attempts, cause }) {
    super(message, cause === undefined ? undefined : { cause });
    /** The last HTTP status, undefined when no answer arrived. */
    this.status = status;
    /** The Idempotency-Key every attempt carried. */
    this.key = key;
    /** How many requests were sent. */
    this.attempts = attempts;
  }
}

/** A 4xx answer (other than 429): the request is wrong or not allowed, nothing was counted. */
export class IncrementRefusedError extends IncrementError {
  name = 'IncrementRefusedError';
  /** @param {number} status @param {{error?: string, field?: string}} body @param {{key: string, attempts: number}} details */
  constructor(status, body, details) {
    super(`Increment refused (HTTP ${status}): ${body.error ?? 'no message'}`, { status, ...details });
    /** The API's message: what was wrong and what is allowed. */
    this.apiMessage = body.error ?? '';
    /** The field to blame, '' when none. */
    this.field = body.field ?? '';
  }
}

/** Certainly not counted: every attempt was answered "not applied" (503, 429, or a 5xx that says so). */
export class IncrementNotAppliedError extends IncrementError {
  name = 'IncrementNotAppliedError';
}

/**
 * The outcome is unknown after the last attempt (504, a lost answer, a network error, a timeout):
 * the increment may or may not count. Send it again later only with the same key (err.key).
 */
export class IncrementUnknownOutcomeError extends IncrementError {
  name = 'IncrementUnknownOutcomeError';
}

/**
 * liveCount's error when no snapshot came from Firestore's backend within listenTimeoutMs: the
 * listener serves only its cache (the device is offline, or the app's Firestore points at an
 * endpoint it cannot reach: e.g. a production build that never connected the emulator).
 */
export class ListenTimeoutError extends Error {
  name = 'ListenTimeoutError';
  /** As a FirestoreError's code: the backend is unavailable. */
  code = 'unavailable';
  /** @param {string} counter @param {number} timeoutMs */
  constructor(counter, timeoutMs) {
    super(`liveCount(${JSON.stringify(counter)}): no snapshot from Firestore's backend within ${timeoutMs} ms; ` +
      'the listener is serving its cache (offline, or the app\'s Firestore cannot reach its endpoint: is the emulator connected?)');
    /** The listenTimeoutMs that passed. */
    this.timeoutMs = timeoutMs;
  }
}
