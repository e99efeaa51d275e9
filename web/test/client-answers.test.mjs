// The web client's handling of answers the local stack does not give (Cloud Run's 429, a 5xx that
// says "not_applied", a refusal without JSON) and of a cancelled increment, through an injected fetch
// that plays them. What the stack does give is tested in Chromium (client.test.mjs).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CountersClient, IncrementNotAppliedError, IncrementRefusedError, IncrementUnknownOutcomeError } from '../client/index.js';

const ok = () => new Response(JSON.stringify({ counter: 'c', delta: 1, shard: 0 }), { status: 200 });
const json = (status, body, headers = {}) => new Response(JSON.stringify(body), { status, headers });

/** A client whose fetch answers request i with answers[i] (a function making a Response, or an error to throw). */
function playing(answers, options = {}) {
  const requests = [];
  const fetch = async (url, init) => {
    requests.push({ url, key: init.headers['Idempotency-Key'] });
    const a = answers[requests.length - 1];
    if (a instanceof Error) throw a;
    return a();
  };
  return { requests, client: new CountersClient({ incrementURL: '/Increment', backoffMs: 1, maxAttempts: 3, fetch, ...options }) };
}

test('429 is resent (Cloud Run at max instances), with the same key', async () => {
  const { client, requests } = playing([() => json(429, { error: 'too many' }), ok]);
  const answer = await client.increment('c');
  assert.equal(answer.attempts, 2);
  assert.equal(requests[1].key, requests[0].key);
});

test('5xx saying not_applied every time is IncrementNotAppliedError; one unknown among them makes it unknown', async () => {
  const notApplied = () => json(500, { error: 'internal', outcome: 'not_applied' });
  await assert.rejects(playing([notApplied, notApplied, notApplied]).client.increment('c'), IncrementNotAppliedError);
  await assert.rejects(playing([() => json(504, { outcome: 'unknown' }), notApplied, notApplied]).client.increment('c'),
    (err) => err instanceof IncrementUnknownOutcomeError && err.attempts === 3 && err.status === 500);
  await assert.rejects(playing([new TypeError('Failed to fetch'), new TypeError('Failed to fetch'), () => json(500, {})]).client.increment('c'),
    IncrementUnknownOutcomeError);
});

test('a refusal without a JSON body is still a refusal, sent once', async () => {
  const { client, requests } = playing([() => new Response('Forbidden', { status: 403 })]);
  await assert.rejects(client.increment('c'), (err) => err instanceof IncrementRefusedError && err.status === 403 && err.field === '');
  assert.equal(requests.length, 1);
});

test('a cancelled increment: nothing sent when cancelled before, an unknown outcome when cancelled while resending', async () => {
  const before = playing([ok]);
  await assert.rejects(before.client.increment('c', { signal: AbortSignal.abort() }), { name: 'AbortError' });
  assert.equal(before.requests.length, 0);
  const controller = new AbortController();
  const during = playing([() => { setTimeout(() => controller.abort(), 0); return json(504, { outcome: 'unknown' }); }, ok], { backoffMs: 60_000 });
  await assert.rejects(during.client.increment('c', { signal: controller.signal }), IncrementUnknownOutcomeError);
  assert.equal(during.requests.length, 1);
});
