// The live example app in headless Chromium (Debian's chromium, driven by playwright-core; no
// browser download): likes show at once, the roll-up listener takes over without ever counting a
// like twice, other users' increments arrive, freshness is shown. Saves a screenshot.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { closeBrowser, launchChromium } from './chromium.mjs';
import { callFunction, eventually, stack, uniqueID } from './stack.mjs';

export const screenshotPath = fileURLToPath(new URL('../test-results/example-app.png', import.meta.url));

test('the example app counts likes at once, exactly once, live', async (t) => {
  const browser = await launchChromium();
  t.after(() => closeBrowser(browser));
  const page = await browser.newPage({ viewport: { width: 1000, height: 760 } });
  const pageErrors = [];
  page.on('pageerror', (err) => pageErrors.push(err.message));
  const consoleLines = [];
  page.on('console', (msg) => { if (msg.type() !== 'log') consoleLines.push(`${msg.type()}: ${msg.text()}`.slice(0, 300)); });

  const [cats, dogs, owls] = ['cats', 'dogs', 'owls'].map(uniqueID);
  const group = uniqueID('pets');
  const post = uniqueID('welcome');
  await page.goto(`${stack.appURL}?counters=${cats},${dogs},${owls}&group=${group}&posts=${post}`);
  const card = (id) => page.locator(`li.card[data-counter="${id}"]`);
  // One read of a card's rendered state, all at once (the page re-renders every 100 ms).
  const state = (id) => card(id).evaluate((el) => ({
    value: Number(el.dataset.value),
    rollup: el.dataset.rollup,
    pending: Number(el.dataset.pending),
    today: Number(el.dataset.today),
    freshness: el.querySelector('.freshness').textContent,
    error: el.querySelector('.error').textContent,
  }));
  // The app configures its counters, whose zero shards may be rolled up (count 0) before this reads.
  await eventually('the cards render', () => state(cats),
    (s) => s.value === 0 && (/no roll-up yet/.test(s.freshness) || s.rollup === '0'));

  // A like shows at once, before a roll-up covers it; two more follow quickly.
  const likes = card(cats).locator('button.like');
  await likes.click();
  const first = await state(cats);
  assert.equal(first.value, 1, `a like shows at once: ${JSON.stringify(first)}`);
  await likes.click();
  await likes.click();

  // Watch until the roll-up covers them: the shown value never exceeds the true 3.
  let highest = 0;
  const settled = await eventually('the roll-up covers the three likes', async () => {
    const s = await state(cats);
    highest = Math.max(highest, s.value);
    return s;
  }, (s) => s.rollup === '3' && s.pending === 0).catch(async (err) => {
    // Tells a roll-up never written from one the page's listener never heard of.
    const count = await fetch(`${stack.functionsURL}/Count?counter=${cats}`).then((r) => r.text(), (e) => e.message);
    throw new Error(`${err.message}; Count answers ${count}; the page's console: ${JSON.stringify(consoleLines.slice(-10))}`);
  });
  assert.equal(settled.value, 3);
  assert.equal(highest, 3, 'a like was shown twice while the roll-up caught up');

  // Someone else's increments arrive through the listener; ours are not shown again.
  await callFunction('Increment', { counter: cats, delta: 2 });
  await likes.click();
  const mixed = await eventually('the roll-up shows 6', async () => {
    const s = await state(cats);
    highest = Math.max(highest, s.value);
    return s;
  }, (s) => s.rollup === '6' && s.pending === 0);
  assert.equal(mixed.value, 6);
  assert.ok(highest <= 6, `never above the true value: highest ${highest}`);
  assert.match(mixed.freshness, /^updated \d+\.\d s ago$/);

  await card(dogs).locator('button.like').click();
  await eventually('dogs shows 1 from its roll-up', () => state(dogs), (s) => s.rollup === '1' && s.value === 1);
  // Every like was today's: "today" follows the roll-up's day bucket next to all time.
  const today = await eventually('cats shows 6 today', () => state(cats), (s) => s.today === 6);
  assert.equal(today.value, 6);
  // The group's top list ranks them, highest first.
  const ranked = () => page.locator('#top li').evaluateAll((items) => items.map((li) => `${li.dataset.counter}=${li.dataset.count}`));
  await eventually('the top list ranks cats, then dogs', ranked, (r) => r.length >= 2 && r[0] === `${cats}=6` && r[1] === `${dogs}=1`);
  // The post's like is a document of this user's; its count comes from the collection counter.
  const postCard = page.locator(`li.post[data-post="${post}"]`);
  await postCard.locator('button.like').click();
  await eventually("the post's like is counted", () => postCard.evaluate((el) => el.dataset.count), (c) => c === '1');
  await card(owls).locator('button.like').click(); // left pending in the screenshot, if the roll-up is slower
  assert.deepEqual(pageErrors, [], 'the page threw');

  await mkdir(fileURLToPath(new URL('../test-results/', import.meta.url)), { recursive: true });
  await page.screenshot({ path: screenshotPath });
  t.diagnostic(`screenshot: ${screenshotPath}`);
});
