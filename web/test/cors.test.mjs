// Browsers call the functions from the origins of ALLOWED_ORIGINS (CORS), in headless Chromium
// (Debian's chromium, driven by playwright-core). internal/webtest starts a functions process of the
// local stack with ALLOWED_ORIGINS naming the example app's origin, http://127.0.0.1:<port>, and
// REQUIRE_ID_TOKEN on. A page of that origin increments through fetch with an ID token (a request the
// browser preflights) and reads the answers, exposed headers included; the same page served as
// http://localhost:<port> is another origin, and the browser refuses to send its increment.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { closeBrowser, launchChromium } from './chromium.mjs';
import { exactCount as exactCountAt, idToken, stack, uniqueID } from './stack.mjs';

const functionsURL = process.env.LOCALSTACK_CORS_FUNCTIONS_URL;
if (!functionsURL) {
  throw new Error('LOCALSTACK_CORS_FUNCTIONS_URL is not set: internal/webtest starts these functions (make test)');
}
// Any document of the app server will do as the page: the origin is what counts.
const listedPage = new URL('config.json', stack.appURL);
const unlistedPage = new URL(listedPage);
unlistedPage.hostname = 'localhost';

/** The exact value of counter, read from Node (no Origin): 0 before its first increment. */
const exactCount = (counter) => exactCountAt(counter, functionsURL);

/** In page, POSTs {counter, delta: 1} to Increment with token and key; what the page could read. */
function increment(page, { counter, token, key }) {
  return page.evaluate(async ({ url, counter, token, key }) => {
    try {
      const resp = await fetch(`${url}/Increment`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}`, 'Idempotency-Key': key },
        body: JSON.stringify({ counter, delta: 1 }),
      });
      return {
        status: resp.status,
        body: await resp.json(),
        replayed: resp.headers.get('Idempotent-Replayed'),
        wwwAuthenticate: resp.headers.get('WWW-Authenticate'),
      };
    } catch (err) {
      return { error: String(err) };
    }
  }, { url: functionsURL, counter, token, key });
}

/** In page, GETs Count of counter (a request the browser does not preflight). */
function count(page, counter) {
  return page.evaluate(async ({ url, counter }) => {
    try {
      const resp = await fetch(`${url}/Count?counter=${counter}`);
      return { status: resp.status, body: await resp.json() };
    } catch (err) {
      return { error: String(err) };
    }
  }, { url: functionsURL, counter });
}

test('a page of a listed origin increments with a token; another origin is refused before anything is sent', async (t) => {
  const browser = await launchChromium();
  t.after(() => closeBrowser(browser));
  const page = await browser.newPage();
  const corsErrors = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' && msg.text().includes('CORS policy')) corsErrors.push(msg.text());
  });
  const counter = uniqueID('cors');
  const token = await idToken(t);

  await page.goto(listedPage.href);
  const first = await increment(page, { counter, token, key: `${counter}-1` });
  assert.equal(first.status, 200, `from ${listedPage.origin}: ${JSON.stringify(first)}`);
  assert.equal(first.body.counter, counter);
  const again = await increment(page, { counter, token, key: `${counter}-1` });
  assert.equal(again.replayed, 'true', `a replayed answer says so, readably: ${JSON.stringify(again)}`);
  const refused = await increment(page, { counter, token: 'not-an-id-token', key: `${counter}-2` });
  assert.equal(refused.status, 401, JSON.stringify(refused));
  assert.match(refused.wwwAuthenticate ?? '', /^Bearer error="invalid_token"/, 'WWW-Authenticate is readable');
  const read = await count(page, counter);
  assert.equal(read.status, 200, JSON.stringify(read));
  assert.equal(read.body.count, 1);
  assert.deepEqual(corsErrors, [], `no CORS refusal on ${listedPage.origin}`);
  assert.equal(await exactCount(counter), 1);

  await page.goto(unlistedPage.href);
  const blocked = await increment(page, { counter, token, key: `${counter}-3` });
  assert.match(blocked.error ?? '', /TypeError: Failed to fetch/, `from ${unlistedPage.origin}: ${JSON.stringify(blocked)}`);
  assert.ok(corsErrors.some((e) => e.includes(unlistedPage.origin) && e.includes('preflight')),
    `Chromium blames the preflight: ${JSON.stringify(corsErrors)}`);
  const unread = await count(page, counter);
  assert.match(unread.error ?? '', /TypeError: Failed to fetch/, `a Count answer is unreadable there: ${JSON.stringify(unread)}`);
  assert.equal(await exactCount(counter), 1, 'the refused increment was never sent');
});
