// Types of the increment-only entry point (increment.js, '@shardcount/counters-client/increment'),
// which loads no Firebase SDK. Usage: docs/web-client.md.

export interface IncrementClientOptions {
  /** The Increment function's URL, or a same-origin path to it (a Firebase Hosting rewrite). */
  incrementURL: string;
  /** Returns the Firebase Auth ID token to send (`() => auth.currentUser?.getIdToken()`); none when it returns nothing. */
  idToken?: () => Promise<string | null | undefined> | string | null | undefined;
  /** Returns the App Check token to send (`async () => (await getToken(appCheck)).token`); none when it returns nothing. */
  appCheckToken?: () => Promise<string | null | undefined> | string | null | undefined;
  /** Requests per increment, first one included (default 6). */
  maxAttempts?: number;
  /** The full-jitter backoff without Retry-After: a random wait up to backoffMs, doubled after each attempt (default 250 ms)... */
  backoffMs?: number;
  /** ...up to maxBackoffMs (default 10 s). */
  maxBackoffMs?: number;
  /** The longest wait a Retry-After gets (default 30 s). */
  maxWaitMs?: number;
  /** How long one request may take before its outcome counts as unknown (default 30 s). */
  attemptTimeoutMs?: number;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof fetch;
  /** Waits ms between attempts, rejecting when signal aborts (default: a timer). Tests replace it. */
  wait?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface IncrementOptions {
  /** The delta (default 1; may be negative). Leave out with member. */
  delta?: number;
  /** For a distinct counter: who or what is counted once. */
  member?: string;
  /** The Idempotency-Key of this increment (default: a new crypto.randomUUID()). */
  key?: string;
  /** Stops resending; the increment then rejects (outcome unknown once a request was sent). */
  signal?: AbortSignal;
}

/** Increment's 200 answer (docs/api.md#increment), with what the client adds. */
export interface IncrementAnswer {
  counter: string;
  delta: number;
  shard: number;
  /** Set for distinct counters and under PER_CALLER_LIMIT: false when nothing was added. */
  counted?: boolean;
  /** RFC 3339: before the write committed; every answer for one key carries the same (absent only from older deployments). */
  received_at?: string;
  /** The Idempotency-Key sent. */
  key: string;
  /** The answer repeats the first one of its key (Idempotent-Replayed: true). */
  replayed: boolean;
  /** Requests sent. */
  attempts: number;
}

/** The default waits between attempts, the Go client's. */
export const RETRY_DEFAULTS: Readonly<{ backoffMs: number; maxBackoffMs: number; maxWaitMs: number }>;

/** Increment over HTTP with the retry table of docs/api.md. */
export class IncrementClient {
  constructor(options: IncrementClientOptions);
  readonly incrementURL: string;
  readonly maxAttempts: number;
  increment(counter: string, options?: IncrementOptions): Promise<IncrementAnswer>;
}

export class IncrementError extends Error {
  /** The last HTTP status; undefined when no answer arrived. */
  status: number | undefined;
  /** The Idempotency-Key every request carried. */
  key: string;
  attempts: number;
}
/** 4xx: wrong or not allowed; nothing was counted. */
export class IncrementRefusedError extends IncrementError {
  status: number;
  /** The API's message: what was wrong and what is allowed. */
  apiMessage: string;
  /** The field to blame ('' when none). */
  field: string;
}
/** Certainly not counted: every request was answered "not applied". */
export class IncrementNotAppliedError extends IncrementError {}
/** May or may not count: resend later only with err.key. A refusal after an unknown outcome is its cause. */
export class IncrementUnknownOutcomeError extends IncrementError {}
