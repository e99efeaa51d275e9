// The web client plays the retry table that the Go client plays too (client/testdata/retry-table.json,
// read by client/table_test.go): each case's answers through an injected fetch, its waits recorded.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  IncrementClient, IncrementNotAppliedError, IncrementRefusedError, IncrementUnknownOutcomeError, RETRY_DEFAULTS,
} from '../client/increment.js';

const table = JSON.parse(readFileSync(new URL('../../client/testdata/retry-table.json', import.meta.url), 'utf8'));

test('the defaults are the table\'s policy (the Go client\'s)', () => {
  assert.deepEqual(RETRY_DEFAULTS, {
    backoffMs: table.policy.first_backoff_ms, maxBackoffMs: table.policy.max_backoff_ms, maxWaitMs: table.policy.max_retry_after_ms,
  });
});

/** The Response (or thrown error) of one of the table's answers. */
function respond(a) {
  if (a.no_answer) throw new TypeError('Failed to fetch');
  const headers = { ...a.headers };
  let body = a.text ?? '';
  if (a.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(a.body);
  }
  return new Response(body, { status: a.status, headers });
}

for (const tc of table.cases) {
  test(tc.name, async () => {
    const keys = [];
    const waits = [];
    const fetch = async (url, init) => {
      keys.push(init.headers['Idempotency-Key']);
      return respond(tc.answers[Math.min(keys.length, tc.answers.length) - 1]);
    };
    const client = new IncrementClient({
      incrementURL: '/Increment', fetch, maxAttempts: tc.max_attempts ?? 10, wait: async (ms) => { waits.push(ms); },
    });
    let result = 'ok';
    let attempts;
    let err;
    try {
      const answer = await client.increment('likes');
      attempts = answer.attempts;
      assert.equal(answer.replayed, tc.want.replayed ?? false, 'replayed');
    } catch (e) {
      err = e;
      attempts = e.attempts;
      if (e instanceof IncrementUnknownOutcomeError) result = 'unknown';
      else if (e instanceof IncrementNotAppliedError) result = 'not_applied';
      else if (e instanceof IncrementRefusedError) result = 'refused';
      else throw e;
    }
    assert.deepEqual({ result, attempts, requests: keys.length }, { result: tc.want.result, attempts: tc.want.attempts, requests: tc.want.attempts },
      `ended ${err ?? 'ok'}`);
    if (tc.want.status) {
      assert.equal(err.status, tc.want.status, 'last status');
      assert.equal(err.field ?? err.cause?.field ?? '', tc.want.field ?? '', 'field');
    }
    assert.ok(keys.every((k) => k && k === keys[0]), `one key on every attempt: ${keys}`);
    assert.equal(waits.length, tc.waits.length, `waits ${waits}`);
    tc.waits.forEach((w, i) => {
      if (w.exactly !== undefined) assert.equal(waits[i], w.exactly, `wait ${i + 1}`);
      else assert.ok(waits[i] >= 0 && waits[i] <= w.at_most, `wait ${i + 1}: ${waits[i]} ms, want at most ${w.at_most}`);
    });
  });
}

test('backoff is full jitter: spread over [0, ceiling], not bunched in its upper half', async () => {
  const waits = [];
  const fail = async () => new Response('{}', { status: 503 });
  for (let i = 0; i < 400; i++) {
    const client = new IncrementClient({ incrementURL: '/Increment', fetch: fail, maxAttempts: 2, wait: async (ms) => { waits.push(ms); } });
    await assert.rejects(client.increment('likes'), IncrementNotAppliedError);
  }
  const ceiling = RETRY_DEFAULTS.backoffMs;
  assert.ok(waits.every((w) => w >= 0 && w <= ceiling));
  assert.ok(waits.filter((w) => w < ceiling / 4).length > 50, 'waits in the lowest quarter');
  assert.ok(waits.filter((w) => w > (ceiling * 3) / 4).length > 50, 'waits in the highest quarter');
});
