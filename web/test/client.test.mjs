// The web client module (web/client) in headless Chromium against the local stack. A page of this
// test's own server loads the module (bundled by esbuild) and increments through the server's
// /s/<scenario>/Increment, a fault proxy in front of the stack's real Increment function: it answers
// 503 with Retry-After itself, or forwards the request and then loses the answer (no answer, a body
// cut short, or a 504 instead of the function's 200). The function and Firestore behind it are real:
// every count is checked with the Count function.
import assert from 'node:assert/strict';
import http from 'node:http';
import { dirname } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { closeBrowser, launchChromium } from './chromium.mjs';
import { callFunction, eventually, exactCount, stack, uniqueID } from './stack.mjs';

/** The module and the Firebase app and Firestore functions the page needs, as one script. */
async function pageBundle() {
  const out = await build({
    stdin: {
      contents: `
        import { initializeApp } from 'firebase/app';
        import { connectFirestoreEmulator, getFirestore } from 'firebase/firestore';
        import * as client from '../client/index.js';
        window.Counters = { ...client, initializeApp, connectFirestoreEmulator, getFirestore };`,
      resolveDir: dirname(fileURLToPath(import.meta.url)),
    },
    bundle: true, format: 'iife', platform: 'browser', target: 'es2022', write: false, logLevel: 'warning',
  });
  return out.outputFiles[0].text;
}

/**
 * The page's server and fault proxy. scenario(name, plan) makes /s/<name>/Increment answer request i
 * (0, 1, ...) as plan(i) says: {answer: {status, headers, body}} without forwarding, or {forward}
 * with lose: 'none' (the connection closes without an answer), 'cut' (a 200's headers, then the
 * connection closes mid-body) or '504', delayMs before the answer, and beforeForward, awaited before
 * the request is forwarded. Every response closes its
 * connection, so that Chromium never resends a request on its own (it does on a reused connection
 * closed without an answer).
 */
async function startProxy(bundle) {
  const scenarios = new Map();
  const server = http.createServer(async (req, res) => {
    res.setHeader('Connection', 'close');
    if (req.method === 'GET' && req.url === '/') {
      res.setHeader('Content-Type', 'text/html');
      return res.end('<!doctype html><meta charset="utf-8"><title>client test</title><script src="/bundle.js"></script>');
    }
    if (req.method === 'GET' && req.url === '/bundle.js') {
      res.setHeader('Content-Type', 'text/javascript');
      return res.end(bundle);
    }
    const m = /^\/s\/([^/]+)\/Increment$/.exec(req.url);
    const s = m && scenarios.get(m[1]);
    if (!s || req.method !== 'POST') {
      res.statusCode = 404;
      return res.end();
    }
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const rec = {
      arrivedAt: Date.now(), key: req.headers['idempotency-key'], authorization: req.headers.authorization,
      appCheck: req.headers['x-firebase-appcheck'], body: Buffer.concat(chunks).toString(),
    };
    s.requests.push(rec);
    const action = s.plan(s.requests.length - 1);
    let status, headers, body;
    if (action.answer) {
      ({ status, headers = {}, body } = action.answer);
    } else {
      await action.beforeForward?.();
      const resp = await fetch(`${stack.functionsURL}/Increment`, {
        method: 'POST', body: rec.body,
        headers: { 'Content-Type': req.headers['content-type'], ...(rec.key !== undefined && { 'Idempotency-Key': rec.key }) },
      });
      status = resp.status;
      body = await resp.text();
      headers = Object.fromEntries(['Content-Type', 'Idempotent-Replayed', 'Retry-After']
        .filter((h) => resp.headers.has(h)).map((h) => [h, resp.headers.get(h)]));
      rec.functionAnswer = { status, replayed: resp.headers.get('Idempotent-Replayed'), body };
    }
    if (action.delayMs) await new Promise((r) => setTimeout(r, action.delayMs));
    rec.answeredAt = Date.now();
    switch (action.lose) {
      case 'none':
        return res.socket.destroy();
      case 'cut':
        res.writeHead(status, { ...headers, 'Content-Length': String(Buffer.byteLength(body)) });
        res.write(body.slice(0, 5));
        return setTimeout(() => res.socket.destroy(), 50);
      case '504':
        status = 504;
        headers = { 'Content-Type': 'application/json' };
        body = JSON.stringify({ error: 'the database did not confirm the write in time; send it again only with the same Idempotency-Key', outcome: 'unknown' });
    }
    res.writeHead(status, headers);
    res.end(body);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    scenario(name, plan) {
      const s = { plan, requests: [] };
      scenarios.set(name, s);
      return s;
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

/** In the page, increments counter through scenario's URL; resolves to the answer or the error. */
function increment(page, scenario, counter, { clientOptions = {}, incrementOptions = {} } = {}) {
  return page.evaluate(async ({ scenario, counter, clientOptions, incrementOptions }) => {
    const { idToken, appCheckToken, ...options } = clientOptions;
    const client = new window.Counters.CountersClient({
      incrementURL: `/s/${scenario}/Increment`, backoffMs: 100, ...options,
      ...(idToken && { idToken: async () => idToken }), ...(appCheckToken && { appCheckToken: () => appCheckToken }),
    });
    try {
      return { answer: await client.increment(counter, incrementOptions) };
    } catch (err) {
      const { name, message, status, key, attempts, field, apiMessage } = err;
      const classes = Object.entries(window.Counters).filter(([, c]) => typeof c === 'function' && err instanceof c).map(([n]) => n);
      return { error: { name, message, status, key, attempts, field, apiMessage, classes } };
    }
  }, { scenario, counter, clientOptions, incrementOptions });
}

let browser, page, proxy;

before(async () => {
  proxy = await startProxy(await pageBundle());
  browser = await launchChromium();
  page = await browser.newPage();
  await page.goto(proxy.url);
});

after(async () => {
  await closeBrowser(browser);
  await proxy.close();
});

test('a 503 storm: the client waits Retry-After each time, then counts once', async (t) => {
  const counter = uniqueID('storm');
  const busy = { status: 503, headers: { 'Content-Type': 'application/json', 'Retry-After': '1' },
    body: JSON.stringify({ error: 'the database is busy; send it again', outcome: 'not_applied' }) };
  const s = proxy.scenario(counter, (i) => (i < 3 ? { answer: busy } : { forward: true }));
  const got = await increment(page, counter, counter);
  assert.ok(got.answer, `the increment failed: ${JSON.stringify(got.error)}`);
  assert.equal(got.answer.attempts, 4, JSON.stringify(got.answer));
  assert.equal(s.requests.length, 4);
  t.diagnostic(`waits after each 503: ${[1, 2, 3].map((i) => s.requests[i].arrivedAt - s.requests[i - 1].answeredAt).join(', ')} ms; the forwarded request took ${s.requests[3].answeredAt - s.requests[3].arrivedAt} ms`);
  for (let i = 1; i < 4; i++) {
    const waited = s.requests[i].arrivedAt - s.requests[i - 1].answeredAt;
    assert.ok(waited >= 1000, `request ${i} came ${waited} ms after a 503 with Retry-After: 1`);
  }
  assert.equal(await exactCount(counter), 1);
});

for (const lose of ['none', 'cut', '504']) {
  test(`a lost answer (${lose}) is resent under the same key and counts once`, async () => {
    const counter = uniqueID(`lost-${lose}`);
    const s = proxy.scenario(counter, (i) => (i === 0 ? { forward: true, lose } : { forward: true }));
    const got = await increment(page, counter, counter);
    assert.ok(got.answer, `the increment failed: ${JSON.stringify(got.error)}`);
    assert.equal(s.requests[0].functionAnswer.status, 200, 'the first request was applied');
    assert.deepEqual([got.answer.attempts, s.requests.length], [2, 2]);
    assert.equal(await exactCount(counter), 1, 'counted once');
    assert.equal(s.requests[1].key, s.requests[0].key, 'the resend carries the first key');
    assert.equal(got.answer.replayed, true, 'the function answered the resend with the first answer');
  });
}

test('an outcome unknown after the bound is its own error; every attempt used one key; counted once', async () => {
  const counter = uniqueID('unknown');
  const s = proxy.scenario(counter, () => ({ forward: true, lose: 'none' }));
  const got = await increment(page, counter, counter, { clientOptions: { maxAttempts: 3 } });
  assert.equal(got.error?.name, 'IncrementUnknownOutcomeError', JSON.stringify(got));
  assert.equal(got.error.attempts, 3);
  assert.ok(!got.error.classes.includes('IncrementRefusedError'));
  assert.deepEqual(new Set(s.requests.map((r) => r.key)), new Set([got.error.key]));
  assert.equal(await exactCount(counter), 1);
});

test('a 4xx is a refusal carrying the API message and field, sent once', async () => {
  const counter = uniqueID('refused');
  const s = proxy.scenario(counter, () => ({ forward: true }));
  const got = await increment(page, counter, counter, { incrementOptions: { delta: 0 } });
  assert.equal(got.error?.name, 'IncrementRefusedError', JSON.stringify(got));
  assert.deepEqual([got.error.status, got.error.field, got.error.attempts, s.requests.length], [400, 'delta', 1, 1]);
  assert.match(got.error.apiMessage, /delta/);
  assert.ok(!got.error.classes.includes('IncrementUnknownOutcomeError'));
  assert.equal(await exactCount(counter), 0);
});

test('tokens the app provides are sent; a given key is used; none without', async () => {
  const counter = uniqueID('tokens');
  const s = proxy.scenario(counter, () => ({ forward: true }));
  const key = crypto.randomUUID();
  const withTokens = await increment(page, counter, counter,
    { clientOptions: { idToken: 'id-token-1', appCheckToken: 'app-check-1' }, incrementOptions: { key } });
  assert.ok(withTokens.answer, JSON.stringify(withTokens));
  const plain = await increment(page, counter, counter);
  assert.ok(plain.answer, JSON.stringify(plain));
  assert.deepEqual(s.requests.map((r) => [r.authorization, r.appCheck, r.key === key]),
    [['Bearer id-token-1', 'app-check-1', true], [undefined, undefined, false]]);
  assert.match(s.requests[1].key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a fresh UUID');
  assert.equal(await exactCount(counter), 2);
});

test('liveCount never shows more than the increments sent, while answers are slow or lost and roll-ups arrive', async (t) => {
  const counter = uniqueID('live');
  // Own increments: every third answer held 1.5 s (roll-ups holding it arrive first), every fifth lost.
  proxy.scenario(`${counter}-own`, (i) => ({ forward: true, delayMs: i % 3 === 0 ? 1500 : 0, lose: i % 5 === 4 ? 'none' : undefined }));
  proxy.scenario(`${counter}-others`, () => ({ forward: true }));
  const [host, port] = stack.firestoreHost.split(':');
  const run = await page.evaluate(async ({ counter, project, host, port }) => {
    const C = window.Counters;
    const db = C.getFirestore(C.initializeApp({ projectId: project, apiKey: 'local-emulator' }, counter));
    C.connectFirestoreEmulator(db, host, Number(port));
    const client = new C.CountersClient({ incrementURL: `/s/${counter}-own/Increment`, backoffMs: 100 });
    let sent = 0; // increments sent so far, ours and others', answered or not: the true count is at most this
    const samples = [];
    const stop = client.liveCount(db, counter, (c) => samples.push({ value: c.value, pending: c.pending, rollup: c.rollup?.count ?? null, sent, at: Date.now() }));
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const other = () => fetch(`/s/${counter}-others/Increment`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ counter }) })
      .then((r) => { if (!r.ok) throw new Error(`HTTP ${r.status}`); });
    // Someone else's increment first, and its roll-up: from then on own increments show next to one.
    sent++;
    await other();
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline && !(samples.at(-1)?.rollup >= 1)) await sleep(50);
    const ops = [];
    for (let i = 0; i < 16; i++) {
      sent++;
      ops.push(client.increment(counter));
      if (i % 2) {
        sent++;
        ops.push(other());
      }
      await sleep(250);
    }
    await Promise.all(ops);
    while (Date.now() < deadline && !(samples.at(-1)?.rollup === sent && samples.at(-1)?.pending === 0)) await sleep(100);
    stop();
    return { sent, samples };
  }, { counter, project: stack.project, host, port });
  const last = run.samples.at(-1);
  const exact = await exactCount(counter);
  assert.equal(exact, run.sent, 'the function counted every increment once');
  assert.deepEqual([last.value, last.rollup, last.pending], [run.sent, run.sent, 0], `the roll-up ends holding every increment; last samples ${JSON.stringify(run.samples.slice(-3))}`);
  const rollups = new Set(run.samples.map((s) => s.rollup)).size - 1;
  t.diagnostic(`${run.samples.length} values, ${rollups} roll-up counts, highest pending ${Math.max(...run.samples.map((s) => s.pending))}`);
  const over = run.samples.filter((s) => s.value > s.sent);
  assert.deepEqual(over, [], `shown above the increments sent (${run.samples.length} samples)`);
  assert.ok(run.samples.some((s) => s.pending > 0 && s.rollup > 0), `own increments were shown pending next to a roll-up: ${JSON.stringify(run.samples)}`);
});

test('liveCount settles a keyed increment by its answer\'s received_at: shown again after a roll-up from before its write, never twice', async () => {
  const counter = uniqueID('settle');
  const [host, port] = stack.firestoreHost.split(':');
  await page.evaluate(({ counter, project, host, port }) => {
    const C = window.Counters;
    const db = C.getFirestore(C.initializeApp({ projectId: project, apiKey: 'local-emulator' }, counter));
    C.connectFirestoreEmulator(db, host, Number(port));
    const client = new C.CountersClient({ incrementURL: `/s/${counter}/Increment` });
    const samples = [];
    const stop = client.liveCount(db, counter, (c) => samples.push({ value: c.value, pending: c.pending, rollup: c.rollup?.count ?? null }));
    window.settle = {
      samples, stop,
      // The increment, and where the samples after its answer begin: a copy of the last one, the
      // state once the answer was taken in (every change since calls onChange).
      increment: () => client.increment(counter).then((answer) => {
        window.settle.answeredFrom = samples.length;
        samples.push({ ...samples.at(-1), answered: true });
        return answer;
      }),
    };
  }, { counter, project: stack.project, host, port });
  const lastSample = () => page.evaluate(() => window.settle.samples.at(-1) ?? null);
  await callFunction('Increment', { counter }); // someone else's, and its roll-up
  await eventually('the first roll-up', lastSample, (s) => s?.rollup === 1);
  // Ours is held until a roll-up of another increment, computed before ours is written, has arrived
  // while ours is in flight.
  proxy.scenario(counter, () => ({ forward: true, beforeForward: async () => {
    await callFunction('Increment', { counter });
    await eventually('a roll-up while ours is in flight', lastSample, (s) => s?.rollup === 2);
  } }));
  const answer = await page.evaluate(() => window.settle.increment());
  await eventually('the roll-up holding ours', lastSample, (s) => s?.rollup === 3 && s.pending === 0);
  await new Promise((r) => setTimeout(r, 1500)); // any roll-up still on its way
  const { samples, answeredFrom } = await page.evaluate(() => {
    window.settle.stop();
    return { samples: window.settle.samples, answeredFrom: window.settle.answeredFrom };
  });
  const over = samples.filter((s) => s.value > 3);
  assert.deepEqual(over, [], `shown twice: ${JSON.stringify(samples)}`);
  const after = samples.slice(answeredFrom);
  assert.deepEqual(after.filter((s) => s.value !== 3), [], `once its answer is in, the value is 3 (two others' and ours): ${JSON.stringify(samples)} (answered from sample ${answeredFrom})`);
  assert.equal(typeof answer.received_at, 'string', `a keyed answer carries received_at: ${JSON.stringify(answer)}`);
});

test('a window\'s count and a top list are read from their documents', async () => {
  const [a, b] = [uniqueID('read-a'), uniqueID('read-b')];
  const group = uniqueID('readers');
  for (const id of [a, b]) await callFunction('ConfigureCounter', { counter: id, windows: ['day'], group });
  await callFunction('Increment', { counter: a, delta: 3 });
  await callFunction('Increment', { counter: b, delta: 2 });
  const [host, port] = stack.firestoreHost.split(':');
  const read = () => page.evaluate(async ({ a, group, project, host, port }) => {
    const C = window.Counters;
    window.readDB ??= (() => {
      const db = C.getFirestore(C.initializeApp({ projectId: project, apiKey: 'local-emulator' }, 'reads'));
      C.connectFirestoreEmulator(db, host, Number(port));
      return db;
    })();
    const client = new C.CountersClient({ incrementURL: '/unused' });
    const day = await client.windowCount(window.readDB, a, 'day');
    const all = await client.top(window.readDB, group, { limit: 1 });
    const today = await client.top(window.readDB, group, { window: 'day' });
    return { day: { ...day, updatedAt: undefined }, all: all.top, today: today.top, todayBucket: today.bucket, label: C.currentBucket('day') };
  }, { a, group, project: stack.project, host, port });
  const got = await eventually('the roll-ups and top lists hold both counters', read,
    (r) => r.day.count === 3 && r.all[0]?.count === 3 && r.today.map((e) => e.count).join() === '3,2');
  assert.deepEqual(got.day, { counter: a, window: 'day', bucket: got.label, count: 3, updatedAt: undefined });
  assert.deepEqual(got.all, [{ counter: a, count: 3 }], 'limit 1: the highest only');
  assert.deepEqual([got.today, got.todayBucket], [[{ counter: a, count: 3 }, { counter: b, count: 2 }], got.label]);
});
