// The live example app: a few like buttons. Each calls the Increment function and shows its counter
// from a snapshot listener on rollups/{id} (Firebase JS SDK, against the local stack's Firestore
// emulator), all time and today (the roll-up's windows.day), with the roll-up's freshness and this
// user's pending likes (see live-counter.js); a listener on tops/{group}_all shows the top list.
import { initializeApp } from 'firebase/app';
import { connectFirestoreEmulator, doc, getFirestore, onSnapshot } from 'firebase/firestore';
import { LiveCounter, timestampMicros } from './live-counter.js';

const DEFAULT_COUNTERS = ['cats', 'dogs', 'owls'];
const DEFAULT_GROUP = 'pets';

/** Today's UTC day bucket label, as the functions write it: 2026-11-23. */
const todayLabel = () => new Date().toISOString().slice(0, 10);

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
  const list = document.getElementById('counters');
  const cards = ids.map((id) => card(db, cfg, id));
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
function card(db, cfg, id) {
  const live = new LiveCounter();
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
  let rollupError = '';
  let rollupToday = { bucket: '', count: 0 }; // the roll-up's windows.day

  const render = () => {
    live.expire();
    $('.value').textContent = String(live.value);
    // Pending likes are today's too; a roll-up of another day has nothing of today yet.
    const today = (rollupToday.bucket === todayLabel() ? rollupToday.count : 0) + live.pendingDelta;
    $('.today').textContent = String(today);
    element.dataset.today = String(today);
    const age = live.ageSeconds();
    $('.freshness').textContent = rollupError || (age === null ? 'no roll-up yet' : `updated ${age.toFixed(1)} s ago`);
    $('.pending').textContent = live.pendingDelta ? `(${live.pendingDelta > 0 ? '+' : ''}${live.pendingDelta} yours, not in the roll-up yet)` : '';
    element.dataset.value = String(live.value);
    element.dataset.rollup = String(live.rollup?.count ?? '');
    element.dataset.pending = String(live.pendingDelta);
  };

  onSnapshot(
    doc(db, 'rollups', id),
    (snap) => {
      if (snap.exists()) {
        const data = snap.data();
        live.applyRollup(Number(data.count), timestampMicros(data.updated_at));
        const day = data.windows?.day;
        rollupToday = { bucket: day?.bucket ?? '', count: Number(day?.count ?? 0) };
      }
      render();
    },
    (err) => {
      rollupError = `listener failed: ${err.code}`;
      render();
    },
  );

  $('.like').addEventListener('click', async () => {
    const entry = live.begin(1);
    render();
    try {
      const resp = await fetch(`${cfg.apiPath}Increment`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ counter: id, delta: 1 }),
      });
      const body = await resp.json();
      if (!resp.ok) throw new Error(body.error || `HTTP ${resp.status}`);
      live.acknowledge(entry, body.received_at, body.counted ?? true);
      $('.error').textContent = '';
    } catch (err) {
      live.fail(entry);
      $('.error').textContent = `like failed: ${err.message}`;
    }
    render();
  });
  return { element, render };
}

main().catch((err) => {
  document.getElementById('status').textContent = `the app could not start: ${err.message}`;
});
