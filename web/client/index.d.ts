// Types of the distributed counters' web client (index.js). Usage: docs/web-client.md.
import type { Firestore } from 'firebase/firestore';

export interface CountersClientOptions {
  /** The Increment function's URL, or a same-origin path to it (a Firebase Hosting rewrite). */
  incrementURL: string;
  /** Returns the Firebase Auth ID token to send (`() => auth.currentUser?.getIdToken()`); none when it returns nothing. */
  idToken?: () => Promise<string | null | undefined> | string | null | undefined;
  /** Returns the App Check token to send (`async () => (await getToken(appCheck)).token`); none when it returns nothing. */
  appCheckToken?: () => Promise<string | null | undefined> | string | null | undefined;
  /** Requests per increment, first one included (default 6). */
  maxAttempts?: number;
  /** First wait before resending an unknown outcome, or a 503/429 without Retry-After; doubles each time (default 500 ms). */
  backoffMs?: number;
  /** The longest wait between two requests, Retry-After included (default 30 s). */
  maxWaitMs?: number;
  /** How long one request may take before its outcome counts as unknown (default 30 s). */
  attemptTimeoutMs?: number;
  /** How long liveCount shows an answered increment that no roll-up settled (default 10 s). */
  maxPendingMs?: number;
  /** Collection names, when the deployment renamed them (defaults: rollups, tops). */
  rollupsCollection?: string;
  topsCollection?: string;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof fetch;
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

export interface LiveCountChange {
  counter: string;
  /** What to show: the roll-up's count plus this client's increments it does not hold yet. */
  value: number;
  /** This client's increments included in value but not (as far as can be told) in the roll-up. */
  pending: number;
  /** The roll-up document; null before the first one. */
  rollup: { count: number; updatedAt: Date; windows: Record<string, { bucket: string; count: number }> } | null;
  /** The listener's error (e.g. permission-denied), null while it works. */
  error: Error | null;
}

export type Window = 'hour' | 'day' | 'month';

export interface WindowCount {
  counter: string;
  window: Window;
  /** The current UTC bucket's label. */
  bucket: string;
  count: number;
  /** The roll-up's updated_at; null when there is no roll-up. */
  updatedAt: Date | null;
}

export interface TopList {
  group: string;
  window: Window | 'all';
  /** The bucket the list ranks ('' for all): compare with currentBucket(window). */
  bucket: string;
  top: { counter: string; count: number }[];
  /** Every roll-up written before it is ranked; null before the first list. */
  updatedAt: Date | null;
}

export class CountersClient {
  constructor(options: CountersClientOptions);
  increment(counter: string, options?: IncrementOptions): Promise<IncrementAnswer>;
  liveCount(db: Firestore, counter: string, onChange: (change: LiveCountChange) => void): () => void;
  windowCount(db: Firestore, counter: string, window: Window, now?: Date): Promise<WindowCount>;
  top(db: Firestore, group: string, options?: { window?: Window | 'all'; limit?: number }): Promise<TopList>;
}

export function currentBucket(window: Window, date?: Date): string;
/** A roll-up's windows map: the window's count now (0 when its bucket is not the current one). */
export function windowCountOf(windows: Record<string, { bucket: string; count: number }> | undefined, window: Window, date?: Date): number;

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
/** May or may not count: resend later only with err.key. */
export class IncrementUnknownOutcomeError extends IncrementError {}

/** liveCount's bookkeeping, without a listener (for apps that read roll-ups their own way). */
export class LiveCounter {
  constructor(options?: { maxPendingMs?: number });
  applyRollup(count: number, updatedAtMicros: number): void;
  begin(delta: number): object;
  acknowledge(entry: object, receivedAt: string | undefined, counted?: boolean, nowMs?: number): void;
  fail(entry: object): void;
  expire(nowMs?: number): void;
  readonly value: number;
  readonly pendingDelta: number;
  ageSeconds(nowMs?: number): number | null;
}
