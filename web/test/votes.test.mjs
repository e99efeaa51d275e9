// The example app's poll card in headless Chromium: votes are documents of a flat collection
// (votes/{poll}_{uid}) counted by a field, a counter per choice (poll-{field:poll}-{field:choice} in
// web/counter-sources.json). Two users vote; a changed vote moves between the choices' counts, and
// the same vote again moves nothing. A wait that fails says what the stack knew of both counters.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { closeBrowser, launchChromium } from './chromium.mjs';
import { eventuallyOf, exactCount, stack, uniqueID } from './stack.mjs';

test("the example app's poll: a changed vote moves between the choices' counts", async (t) => {
  const browser = await launchChromium();
  t.after(() => closeBrowser(browser));
  const poll = uniqueID('poll');
  const voter = async () => {
    const page = await (await browser.newContext()).newPage(); // a user of its own
    const errors = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${stack.appURL}?counters=${uniqueID('cats')}&posts=${uniqueID('post')}&polls=${poll}`);
    const card = page.locator(`li.poll[data-poll="${poll}"]`);
    const counts = () => card.evaluate((el) => ({ yes: el.dataset.yes, no: el.dataset.no, mine: el.dataset.mine }));
    return { card, counts, errors };
  };
  const [a, b] = [await voter(), await voter()];
  const encoded = poll.replaceAll('-', '%2D');
  const counters = [`poll-${encoded}-yes`, `poll-${encoded}-no`];
  const waitFor = (what, next, ok) => eventuallyOf(counters, what, next, ok, 100_000);
  await waitFor('the cards render', a.counts, (s) => s.yes === '0' && s.no === '0');

  await a.card.locator('button.vote-yes').click();
  await b.card.locator('button.vote-yes').click();
  await waitFor('two yes', b.counts, (s) => s.yes === '2' && s.no === '0' && s.mine === 'yes');
  await b.card.locator('button.vote-no').click(); // an update of b's vote: it moves
  await waitFor('the vote moved', a.counts, (s) => s.yes === '1' && s.no === '1' && s.mine === 'yes');
  assert.equal(await exactCount(`poll-${encoded}-yes`), 1, 'Count of yes');
  assert.equal(await exactCount(`poll-${encoded}-no`), 1, 'Count of no');
  await b.card.locator('button.vote-no').click(); // the same vote again changes nothing
  await staysAtVotes(a, { yes: '1', no: '1' });
  for (const v of [a, b]) assert.deepEqual(v.errors, [], 'a page threw');
});

/** Checks that for 3 s voter's card keeps showing want. */
async function staysAtVotes(voter, want) {
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline) {
    const s = await voter.counts();
    assert.deepEqual({ yes: s.yes, no: s.no }, want);
    await new Promise((r) => setTimeout(r, 250));
  }
}
