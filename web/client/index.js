// The web client of the distributed counters: Increment with the retry table, a live count that shows
// this client's own increments once and never twice, and reads of window counts and top lists.
// Types: index.d.ts. Usage: docs/web-client.md. Pages that only increment import
// '@shardcount/counters-client/increment' (increment.js), which loads no Firebase SDK.
export { CountersClient, currentBucket, windowCountOf } from './client.js';
export { IncrementClient, RETRY_DEFAULTS } from './increment.js';
export { IncrementError, IncrementNotAppliedError, IncrementRefusedError, IncrementUnknownOutcomeError, ListenTimeoutError } from './errors.js';
export { LiveCounter } from './live-counter.js';
