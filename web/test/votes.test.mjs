// The example app's poll card in headless Chromium: votes are documents of a flat collection
// (votes/{poll}_{uid}) counted by a field, a counter per choice (poll-{field:poll}-{field:choice} in
// web/counter-sources.json). Two users vote; a changed vote moves between the choices' counts, and
// the same vote again moves nothing. A wait that fails says what the stack knew of both counters.
// A third vote, written and moved server-side first, makes both roll-ups exist before the pages
// listen: the emulator's listener on an absent document can miss its creation for minutes (a
// user's own vote is absent until its first click: showsOwnVote).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { closeBrowser, launchChromium } from './chromium.mjs';
import { adminSet, eventually, eventuallyOf, exactCount, ownerGet, stack, uniqueID } from './stack.mjs';

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
    const counts = () => card.evaluate((el) => ({ yes: el.dataset.yes, no: el.dataset.no, mine: el.dataset.mine, error: el.querySelector('.error').textContent }));
    return { page, card, counts, errors };
  };
  const encoded = poll.replaceAll('-', '%2D');
  const counters = [`poll-${encoded}-yes`, `poll-${encoded}-no`];
  const waitFor = (what, next, ok) => eventuallyOf(counters, what, next, ok, 100_000);
  const rollups = () => Promise.all(counters.map((id) => ownerGet(`rollups/${encodeURIComponent(id)}`).then((f) => f?.count?.integerValue)));
  for (const [choice, want] of [['yes', [1, undefined]], ['no', [0, 1]]]) {
    await adminSet(`votes/${poll}_seed`, { poll: { stringValue: poll }, choice: { stringValue: choice } });
    await waitFor(`the seed vote's roll-ups`, rollups, (got) => got.every((n, i) => n === want[i]?.toString()));
  }
  const [a, b] = [await voter(), await voter()];
  await waitFor('the cards render', a.counts, (s) => s.yes === '0' && s.no === '1');

  await a.card.locator('button.vote-yes').click();
  await b.card.locator('button.vote-yes').click();
  await waitFor('two yes', b.counts, (s) => s.yes === '2' && s.no === '1');
  for (const v of [a, b]) await showsOwnVote(v, 'yes', waitFor);
  await b.card.locator('button.vote-no').click(); // an update of b's vote: it moves
  await waitFor('the vote moved', a.counts, (s) => s.yes === '1' && s.no === '2' && s.mine === 'yes');
  await waitFor("b's vote shows moved", b.counts, (s) => s.yes === '1' && s.no === '2' && s.mine === 'no');
  assert.equal(await exactCount(`poll-${encoded}-yes`), 1, 'Count of yes');
  assert.equal(await exactCount(`poll-${encoded}-no`), 2, 'Count of no');
  await b.card.locator('button.vote-no').click(); // the same vote again changes nothing
  await staysAtVotes(a, { yes: '1', no: '2' });
  for (const v of [a, b]) assert.deepEqual(v.errors, [], 'a page threw');
});

/**
 * Waits for voter's card to mark choice as its own vote: live, else after one reload. Its listener
 * first saw the vote absent, and the emulator's listener on an absent document can miss its
 * creation for minutes.
 */
async function showsOwnVote(voter, choice, waitFor) {
  const mine = (s) => s.mine === choice;
  try {
    await eventually(`the own vote ${choice}`, voter.counts, mine, 20_000);
  } catch {
    console.log(`the card missed its own vote ${choice} live (the emulator's listener); reloading`);
    await voter.page.reload();
    await waitFor(`the own vote ${choice}, after a reload`, voter.counts, mine);
  }
}

/** Checks that for 3 s voter's card keeps showing want. */
async function staysAtVotes(voter, want) {
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline) {
    const s = await voter.counts();
    assert.deepEqual({ yes: s.yes, no: s.no }, want);
    await new Promise((r) => setTimeout(r, 250));
  }
}
