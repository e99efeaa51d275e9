// Types of the distributed counters' web client (index.js). Usage: docs/web-client.md.
import type { Firestore } from 'firebase/firestore';
import { IncrementClient } from './increment.js';
import type { IncrementAnswer, IncrementClientOptions, IncrementOptions } from './increment.js';

export * from './increment.js';

export interface CountersClientOptions extends IncrementClientOptions {
  /** How long liveCount shows an answered increment that no roll-up settled (default 10 s). */
  maxPendingMs?: number;
  /** How long liveCount waits for a snapshot from Firestore's backend before its error is a ListenTimeoutError (default 10 s). */
  listenTimeoutMs?: number;
  /** Collection names, when the deployment renamed them (defaults: rollups, tops). */
  rollupsCollection?: string;
  topsCollection?: string;
}

export interface LiveCountChange {
  counter: string;
  /** What to show: the roll-up's count plus this client's increments it does not hold yet. */
  value: number;
  /** This client's increments included in value but not (as far as can be told) in the roll-up. */
  pending: number;
  /** The roll-up document; null before the first one. */
  rollup: { count: number; updatedAt: Date; windows: Record<string, { bucket: string; count: number }> } | null;
  /** The listener's error (e.g. permission-denied), or a ListenTimeoutError (no snapshot from the backend within listenTimeoutMs); null while it works. */
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

/** IncrementClient, whose increments this client's liveCount listeners show at once, and reads of the counter documents. */
export class CountersClient extends IncrementClient {
  constructor(options: CountersClientOptions);
  increment(counter: string, options?: IncrementOptions): Promise<IncrementAnswer>;
  liveCount(db: Firestore, counter: string, onChange: (change: LiveCountChange) => void): () => void;
  windowCount(db: Firestore, counter: string, window: Window, now?: Date): Promise<WindowCount>;
  top(db: Firestore, group: string, options?: { window?: Window | 'all'; limit?: number }): Promise<TopList>;
}

export function currentBucket(window: Window, date?: Date): string;
/** A roll-up's windows map: the window's count now (0 when its bucket is not the current one). */
export function windowCountOf(windows: Record<string, { bucket: string; count: number }> | undefined, window: Window, date?: Date): number;

/** liveCount's error when no snapshot came from Firestore's backend within listenTimeoutMs (offline, or an unreachable endpoint). */
export class ListenTimeoutError extends Error {
  constructor(counter: string, timeoutMs: number);
  /** 'unavailable', as a FirestoreError's code would say. */
  code: 'unavailable';
  timeoutMs: number;
}

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
