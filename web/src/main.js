// The live example app: a few like buttons, on the web client module (web/client). Each likes through
// its increment and shows its counter with liveCount (a snapshot listener on rollups/{id}, Firebase JS
// SDK, against the local stack's Firestore emulator, plus this user's pending likes), all time and
// today (the roll-up's windows.day), with the roll-up's freshness; a listener on tops/{group}_all
// shows the top list.
import { initializeApp } from 'firebase/app';
import { connectFirestoreEmulator, doc, getFirestore, onSnapshot } from 'firebase/firestore';
import { CountersClient, windowCountOf } from '../client/index.js';

const DEFAULT_COUNTERS = ['cats', 'dogs', 'owls'];
const DEFAULT_GROUP = 'pets';

async function main() {
  const cfg = await (await fetch('/config.json')).json();
  const app = initializeApp({ projectId: cfg.projectId, apiKey: 'local-emulator' });
  const db = getFirestore(app);
  connectFirestoreEmulator(db, cfg.firestoreHost, cfg.firestorePort);

  // ?counters=a,b,c picks the counters (the browser test uses IDs of its own).
  const param = new URLSearchParams(location.search).get('counters');
  const ids = param ? param.split(',').filter(Boolean) : DEFAULT_COUNTERS;
  const group = new URLSearchParams(location.search).get('group') || DEFAULT_GROUP;
  // Counting by day and ranking in a group are configured once per counter. The local example does it
  // here (the stack serves every function); in production an operator or the app's backend does.
  await Promise.all(ids.map((id) => fetch(`${cfg.apiPath}ConfigureCounter`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ counter: id, windows: ['day'], group }),
  })));
  topList(db, group);
  const counters = new CountersClient({ incrementURL: `${cfg.apiPath}Increment` });
  const list = document.getElementById('counters');
  const cards = ids.map((id) => card(db, counters, id));
  cards.forEach((c) => list.append(c.element));
  setInterval(() => cards.forEach((c) => c.render()), 100);
}

/** The group's all-time top list, from a listener on tops/{group}_all. */
function topList(db, group) {
  const list = document.getElementById('top');
  document.getElementById('top-group').textContent = group;
  onSnapshot(doc(db, 'tops', `${group}_all`), (snap) => {
    const top = snap.exists() ? snap.data().top : [];
    list.replaceChildren(...top.map(({ counter, count }) => {
      const item = document.createElement('li');
      item.dataset.counter = counter;
      item.dataset.count = String(count);
      item.textContent = `${counter}: ${count}`;
      return item;
    }));
  });
}

/** One counter's card: name, like button, value today and all time, freshness, pending likes. */
function card(db, counters, id) {
  const element = document.createElement('li');
  element.className = 'card';
  element.dataset.counter = id;
  element.innerHTML = `
    <span class="name"></span>
    <span class="value" aria-live="polite">–</span>
    <span class="label">today</span>
    <span class="today">–</span>
    <button class="like" type="button">♥ Like</button>
    <span class="freshness">waiting for the roll-up…</span>
    <span class="pending"></span>
    <span class="error" role="alert"></span>`;
  element.querySelector('.name').textContent = id;
  const $ = (sel) => element.querySelector(sel);
  /** @type {import('../client/index').LiveCountChange | null} */
  let live = null;

  const render = () => {
    if (!live) return;
    const { value, pending, rollup, error } = live;
    $('.value').textContent = String(value);
    // Pending likes are today's too; a roll-up of another day has nothing of today yet.
    const today = windowCountOf(rollup?.windows, 'day') + pending;
    $('.today').textContent = String(today);
    element.dataset.today = String(today);
    const age = rollup && Math.max(0, Date.now() - rollup.updatedAt.getTime()) / 1000;
    $('.freshness').textContent = error ? `listener failed: ${error.code}` : (rollup ? `updated ${age.toFixed(1)} s ago` : 'no roll-up yet');
    $('.pending').textContent = pending ? `(${pending > 0 ? '+' : ''}${pending} yours, not in the roll-up yet)` : '';
    element.dataset.value = String(value);
    element.dataset.rollup = String(rollup?.count ?? '');
    element.dataset.pending = String(pending);
  };

  counters.liveCount(db, id, (change) => {
    live = change;
    render();
  });

  $('.like').addEventListener('click', async () => {
    try {
      await counters.increment(id);
      $('.error').textContent = '';
    } catch (err) {
      $('.error').textContent = `like failed: ${err.apiMessage || err.message}`;
    }
  });
  return { element, render };
}

main().catch((err) => {
  document.getElementById('status').textContent = `the app could not start: ${err.message}`;
});
