// Likes kept as the app's own documents, counted by the collection counter likes-{post}
// (counter-sources.json), in headless Chromium: pages of two or three signed-in users (each a browser
// context of its own: its own Auth user and IndexedDB) like and unlike through the Firebase JS SDK
// under the example app's rules, loaded by the stack with the counters' block
// (firestore.example-app.rules). The roll-up follows the like documents exactly; a second like by
// the same user, a like in another's name and a like with other fields are refused. A like made
// offline (persistent cache, context.setOffline) reaches the server, and the count, once, after the
// page is back online, also when the page was closed offline and the next one sends it (IndexedDB).
// Finally the example app's own post card likes and unlikes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { closeBrowser, launchChromium } from './chromium.mjs';
import { eventually, eventuallyOf, exactCount, stack, uniqueID } from './stack.mjs';

const appConfig = async () => (await fetch(new URL('config.json', stack.appURL))).json();

/** The page's script: likes-page.js with the Firebase JS SDK, bundled once. */
const pageScript = build({
  entryPoints: [fileURLToPath(new URL('likes-page.js', import.meta.url))],
  bundle: true, format: 'iife', platform: 'browser', target: 'es2022', write: false, logLevel: 'warning',
}).then((r) => r.outputFiles[0].text);

/**
 * A browser context (a new one unless given) with one signed-in user's likes page; resolves to
 * {context, page, uid, errors}.
 */
async function user(browser, cfg, context) {
  context ??= await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err.message));
  // The page is a document of the example app's server with the script added: a real origin (so
  // IndexedDB works) that Chromium knows to be on the loopback address, as the emulators are. (A page
  // that Playwright's page.route serves has no known address, and Chromium's local network access
  // checks then block its requests to the emulators: "Permission was denied for this request to
  // access the `loopback` address space".)
  await page.goto(new URL('config.json', stack.appURL).href);
  await page.addScriptTag({ content: await pageScript });
  const uid = await page.evaluate((c) => window.likesPage.start(c), cfg);
  return { context, page, uid, errors };
}

/** Calls window.likesPage[method](...args) in page. */
const call = (u, method, ...args) => u.page.evaluate(([m, a]) => window.likesPage[m](...a), [method, args]);

/** The IDs of post's like documents, as the server has them (read with the emulator's owner credential). */
async function likeIDs(post) {
  const url = `http://${stack.firestoreHost}/v1/projects/${stack.project}/databases/(default)/documents/posts/${post}/likes?pageSize=300`;
  const resp = await fetch(url, { headers: { Authorization: 'Bearer owner' } });
  if (!resp.ok) throw new Error(`list likes of ${post}: HTTP ${resp.status} ${await resp.text()}`);
  return ((await resp.json()).documents ?? []).map((d) => d.name.split('/').at(-1)).sort();
}

/** The count on post's roll-up as the server has it (null before the first roll-up). */
async function rolledUp(post) {
  const url = `http://${stack.firestoreHost}/v1/projects/${stack.project}/databases/(default)/documents/rollups/likes-${post}`;
  const resp = await fetch(url, { headers: { Authorization: 'Bearer owner' } });
  if (resp.status === 404) return null;
  if (!resp.ok) throw new Error(`roll-up of ${post}: HTTP ${resp.status} ${await resp.text()}`);
  return Number((await resp.json()).fields.count.integerValue);
}

/**
 * Waits until the server's like documents of post are exactly uids, then until the page's roll-up
 * listener (watcher), the roll-up and Count all say their number; returns what the listener saw.
 */
async function settles(post, uids, watcher) {
  const want = [...uids].sort();
  await eventually(`the like documents of ${post} are ${want}`, () => likeIDs(post), (ids) => JSON.stringify(ids) === JSON.stringify(want));
  await eventuallyOf([`likes-${post}`], `the page's listener shows ${want.length}`, () => call(watcher, 'counts', post), (c) => c.at(-1) === want.length);
  assert.equal(await rolledUp(post), want.length, 'the roll-up');
  assert.equal(await exactCount(`likes-${post}`), want.length, 'Count');
  return call(watcher, 'counts', post);
}

/** Checks that for ms, the roll-up and Count stay at n and the listener delivers nothing else. */
async function staysAt(post, n, watcher, ms = 3000) {
  const before = (await call(watcher, 'counts', post)).length;
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    assert.equal(await rolledUp(post), n, 'the roll-up moved');
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.equal(await exactCount(`likes-${post}`), n, 'Count moved');
  assert.deepEqual((await call(watcher, 'counts', post)).slice(before).filter((c) => c !== n), [], 'the listener saw another count');
}

test('three users like and unlike; the count follows the like documents; the rules allow one like each', async (t) => {
  const cfg = await appConfig();
  assert.ok(cfg.authEmulatorUrl, 'the stack runs the Auth emulator');
  const browser = await launchChromium();
  t.after(() => closeBrowser(browser));
  const [a, b, c] = [await user(browser, cfg), await user(browser, cfg), await user(browser, cfg)];
  const post = uniqueID('post');
  await call(a, 'watch', post);

  assert.equal(await call(a, 'like', post), 'ok');
  await settles(post, [a.uid], a);
  assert.equal(await call(b, 'like', post), 'ok');
  assert.equal(await call(c, 'like', post), 'ok');
  await settles(post, [a.uid, b.uid, c.uid], a);
  assert.equal(await call(b, 'unlike', post), 'ok');
  await settles(post, [a.uid, c.uid], a);

  // One like per user: liking again (an update of the existing document), liking in another user's
  // name, and a like with a field of its own are refused, and nothing moves.
  assert.deepEqual({
    'a likes again': await call(a, 'like', post),
    "b likes in c's name": await call(b, 'forge', post, c.uid, {}),
    "b likes in a new user's name": await call(b, 'forge', post, 'someone-else', {}),
    'b likes with another field': await call(b, 'forge', post, b.uid, { weight: 10 }),
  }, {
    'a likes again': 'permission-denied',
    "b likes in c's name": 'permission-denied',
    "b likes in a new user's name": 'permission-denied',
    'b likes with another field': 'permission-denied',
  });
  await staysAt(post, 2, a);
  assert.deepEqual(await likeIDs(post), [a.uid, c.uid].sort());

  // b likes again after unliking: a new like document counts again; everyone unlikes: 0.
  assert.equal(await call(b, 'like', post), 'ok');
  await settles(post, [a.uid, b.uid, c.uid], a);
  for (const u of [a, b, c]) assert.equal(await call(u, 'unlike', post), 'ok');
  const counts = await settles(post, [], a);
  assert.ok(counts.every((n) => n >= 0 && n <= 3), `the listener only saw counts between 0 and 3: ${counts}`);
  t.diagnostic(`counts the listener saw: ${counts}`);
  for (const u of [a, b, c]) assert.deepEqual(u.errors, [], 'a page threw');
});

test('a like made offline counts once, after the page is back online', async (t) => {
  const cfg = await appConfig();
  const browser = await launchChromium();
  t.after(() => closeBrowser(browser));
  const [offline, other] = [await user(browser, cfg), await user(browser, cfg)];
  const post = uniqueID('post');
  await call(offline, 'watch', post);
  assert.equal(await call(other, 'like', post), 'ok');
  await settles(post, [other.uid], offline);

  await offline.context.setOffline(true);
  assert.equal(await call(offline, 'online'), false, 'navigator.onLine in the offline page');
  await call(offline, 'startLike', post, 'offline-like');
  // The page has the like at once, in its cache only; the server has nothing of it.
  assert.deepEqual(await call(offline, 'cachedLike', post), { exists: true, pending: true });
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(await call(offline, 'outcomeOf', 'offline-like'), 'pending', 'the like was acknowledged while offline');
  assert.deepEqual(await likeIDs(post), [other.uid], 'the server got the like while the page was offline');
  await staysAt(post, 1, offline, 2000);

  const back = Date.now();
  await offline.context.setOffline(false);
  await eventually('the offline like is acknowledged', () => call(offline, 'outcomeOf', 'offline-like'), (o) => o !== 'pending', 60_000);
  t.diagnostic(`acknowledged ${Date.now() - back} ms after the page went back online`);
  assert.equal(await call(offline, 'outcomeOf', 'offline-like'), 'ok');
  assert.equal(await call(offline, 'flushed'), 'ok');
  const counts = await settles(post, [offline.uid, other.uid], offline);
  await staysAt(post, 2, offline, 5000);
  assert.deepEqual(await likeIDs(post), [offline.uid, other.uid].sort(), 'the like document exists once');
  assert.ok(counts.every((n) => n <= 2), `the count never went past 2: ${counts}`);
  t.diagnostic(`counts the offline page's listener saw: ${counts}`);
  for (const u of [offline, other]) assert.deepEqual(u.errors, [], 'a page threw');
});

test('a like made offline in a page closed before it reconnected is sent by the next page (IndexedDB)', async (t) => {
  const cfg = await appConfig();
  const browser = await launchChromium();
  t.after(() => closeBrowser(browser));
  const [first, other] = [await user(browser, cfg), await user(browser, cfg)];
  const post = uniqueID('post');
  await call(other, 'watch', post);
  assert.equal(await call(other, 'like', post), 'ok');
  await settles(post, [other.uid], other);

  await first.context.setOffline(true);
  await call(first, 'startLike', post, 'offline-like');
  assert.deepEqual(await call(first, 'cachedLike', post), { exists: true, pending: true });
  await first.page.close(); // the app is closed before it ever reconnects
  await first.context.setOffline(false);
  await staysAt(post, 1, other, 2000);
  assert.deepEqual(await likeIDs(post), [other.uid], 'a closed page sent the like');

  // The next page of the same browser (same IndexedDB, same signed-in user) finds the like waiting
  // in its cache and sends it.
  const next = await user(browser, cfg, first.context);
  assert.equal(next.uid, first.uid, 'the next page is the same user');
  assert.deepEqual(await call(next, 'cachedLike', post), { exists: true, pending: true }, "the next page's cache");
  assert.equal(await call(next, 'flushed'), 'ok');
  await settles(post, [first.uid, other.uid], other);
  await staysAt(post, 2, other, 5000);
  assert.deepEqual(await likeIDs(post), [first.uid, other.uid].sort(), 'the like document exists once');
  for (const u of [next, other]) assert.deepEqual(u.errors, [], 'a page threw');
});

test("the example app's post card likes and unlikes through the like document", async (t) => {
  const browser = await launchChromium();
  t.after(() => closeBrowser(browser));
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err.message));
  const post = uniqueID('post');
  await page.goto(`${stack.appURL}?counters=${uniqueID('cats')}&posts=${post}`);
  const card = page.locator(`li.post[data-post="${post}"]`);
  const state = () => card.evaluate((el) => ({ count: el.dataset.count, liked: el.dataset.liked, pending: el.dataset.pending, error: el.querySelector('.error').textContent }));
  await eventually('the card renders', state, (s) => s.count === '0' && s.liked === 'false');

  await card.locator('button.like').click();
  await eventually('the like is counted', state, (s) => s.count === '1' && s.liked === 'true' && s.pending === 'false');
  assert.equal((await likeIDs(post)).length, 1);
  await card.locator('button.like').click();
  const s = await eventually('the unlike is counted', state, (x) => x.count === '0' && x.liked === 'false' && x.pending === 'false');
  assert.equal(s.error, '');
  assert.deepEqual(await likeIDs(post), []);
  assert.deepEqual(errors, [], 'the page threw');
});
