// Unit tests of the latency compensation (web/client/live-counter.js): own increments show until a
// roll-up that may hold them arrives, and never twice.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LiveCounter, rfc3339Micros } from '../client/live-counter.js';

const at = (iso) => rfc3339Micros(iso);

test('rfc3339Micros keeps microseconds of nanosecond times', () => {
  assert.equal(at('2026-11-21T13:01:52.123456789Z') - at('2026-11-21T13:01:52Z'), 123456);
  assert.equal(at('2026-11-21T13:01:52.5Z') - at('2026-11-21T13:01:52Z'), 500000);
  assert.throws(() => rfc3339Micros('yesterday'));
});

test('a pending like shows until a later roll-up covers it, then counts once', () => {
  const c = new LiveCounter();
  c.applyRollup(10, at('2026-01-01T00:00:00Z'));
  const like = c.begin(1);
  assert.equal(c.value, 11, 'shown at once, in flight');
  c.applyRollup(11, at('2026-01-01T00:00:00.500Z')); // includes our write, but we have no ack yet
  assert.equal(c.value, 11, 'in flight, a roll-up that arrived since may hold it: not shown twice');
  c.acknowledge(like, '2026-01-01T00:00:00.400Z');
  assert.equal(c.value, 11, 'the roll-up computed after the function received it counts it: not twice');
});

test('a like hidden by a roll-up in flight shows again when its answer says that roll-up predates it', () => {
  const c = new LiveCounter();
  c.applyRollup(10, at('2026-01-01T00:00:00Z'));
  const like = c.begin(1);
  c.applyRollup(12, at('2026-01-01T00:00:00.300Z')); // someone else's likes
  assert.equal(c.value, 12);
  c.acknowledge(like, '2026-01-01T00:00:00.400Z');
  assert.equal(c.value, 13, 'received after that roll-up: pending again');
});

test('an answer without received_at (an older deployment) settles with the first roll-up after it, or at once after one in flight', () => {
  const c = new LiveCounter();
  c.applyRollup(10, at('2026-01-01T00:00:00Z'));
  const a = c.begin(1);
  c.acknowledge(a, undefined);
  assert.equal(c.value, 11, 'no roll-up since it was sent: the roll-up shown cannot hold it');
  c.applyRollup(11, at('2026-01-01T00:00:01Z'));
  assert.deepEqual([c.value, c.pendingDelta], [11, 0], 'the next roll-up may hold it: only the roll-up counts');
  const b = c.begin(1);
  c.applyRollup(12, at('2026-01-01T00:00:02Z'));
  c.acknowledge(b, undefined);
  assert.deepEqual([c.value, c.pendingDelta], [12, 0], 'a roll-up arrived in flight: it, or the next, shows it');
});

test('a roll-up computed before the function received the like does not settle it', () => {
  const c = new LiveCounter();
  const like = c.begin(1);
  c.acknowledge(like, '2026-01-01T00:00:01.000001Z');
  c.applyRollup(0, at('2026-01-01T00:00:01Z'));
  assert.equal(c.value, 1);
  c.applyRollup(1, at('2026-01-01T00:00:01.2Z'));
  assert.deepEqual([c.value, c.pendingDelta], [1, 0]);
});

test('failed or uncounted likes disappear; stale ones expire', () => {
  const c = new LiveCounter({ maxPendingMs: 1000 });
  const a = c.begin(1);
  const b = c.begin(1);
  const d = c.begin(1);
  c.fail(a);
  c.acknowledge(b, '2026-01-01T00:00:00Z', false);
  assert.equal(c.value, 1);
  c.acknowledge(d, '2026-01-01T00:00:00Z', true, 5000);
  c.expire(5999);
  assert.equal(c.value, 1);
  c.expire(6000);
  assert.equal(c.value, 0);
});
