// The live example app: a few like buttons, on the web client module (web/client). Each likes through
// its increment and shows its counter with liveCount (a snapshot listener on rollups/{id}, Firebase JS
// SDK, against the local stack's Firestore emulator, plus this user's pending likes), all time and
// today (the roll-up's windows.day), with the roll-up's freshness; a listener on tops/{group}_all
// shows the top list. Posts are liked the other way: the signed-in user (anonymous, Auth emulator)
// writes and deletes a like document of their own, offline too (IndexedDB cache), and the count
// comes from the collection counter's roll-up (likes.js). Polls count votes by a field: each user's
// vote is a document of a flat collection, and each choice's count a counter of its own (votes.js).
import { initializeApp } from 'firebase/app';
import { connectAuthEmulator, getAuth, signInAnonymously } from 'firebase/auth';
import {
  connectFirestoreEmulator, doc, initializeFirestore, onSnapshot, persistentLocalCache, persistentMultipleTabManager,
} from 'firebase/firestore';
import { CountersClient, windowCountOf } from '../client/index.js';
import { like, listenToLikeCount, listenToMyLike, unlike } from './likes.js';
import { listenToChoiceCount, listenToMyVote, vote } from './votes.js';

const DEFAULT_COUNTERS = ['cats', 'dogs', 'owls'];
const DEFAULT_GROUP = 'pets';
const DEFAULT_POSTS = ['welcome'];
const DEFAULT_POLLS = ['lunch'];
const CHOICES = ['yes', 'no'];

async function main() {
  const cfg = await (await fetch('/config.json')).json();
  const app = initializeApp({ projectId: cfg.projectId, apiKey: 'local-emulator' });
  // A persistent cache (IndexedDB, shared by the app's tabs) keeps likes made offline until the
  // page is back online.
  const db = initializeFirestore(app, { localCache: persistentLocalCache({ tabManager: persistentMultipleTabManager() }) });
  connectFirestoreEmulator(db, cfg.firestoreHost, cfg.firestorePort);

  // ?counters=a,b,c picks the counters and ?posts=p,q the posts (the browser tests use IDs of their own).
  const params = new URLSearchParams(location.search);
  const list = (name, def) => (params.get(name) ? params.get(name).split(',').filter(Boolean) : def);
  const ids = list('counters', DEFAULT_COUNTERS);
  const group = params.get('group') || DEFAULT_GROUP;
  posts(app, db, cfg, list('posts', DEFAULT_POSTS), list('polls', DEFAULT_POLLS));
  // Counting by day and ranking in a group are configured once per counter. The local example does it
  // here (the stack serves every function); in production an operator or the app's backend does.
  await Promise.all(ids.map((id) => fetch(`${cfg.apiPath}ConfigureCounter`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ counter: id, windows: ['day'], group }),
  })));
  topList(db, group);
  const counters = new CountersClient({ incrementURL: `${cfg.apiPath}Increment` });
  const cardList = document.getElementById('counters');
  const cards = ids.map((id) => card(db, counters, id));
  cards.forEach((c) => cardList.append(c.element));
  setInterval(() => cards.forEach((c) => c.render()), 100);
}

/** The posts' and polls' cards, once the user is signed in (anonymously, on the stack's Auth emulator). */
async function posts(app, db, cfg, ids, polls) {
  const list = document.getElementById('posts');
  if (!cfg.authEmulatorUrl) {
    list.textContent = 'posts need the Auth emulator (the stack runs without it: LOCALSTACK_AUTH=false)';
    return;
  }
  const auth = getAuth(app);
  connectAuthEmulator(auth, cfg.authEmulatorUrl, { disableWarnings: true });
  const { user } = auth.currentUser ? { user: auth.currentUser } : await signInAnonymously(auth);
  ids.forEach((id) => list.append(postCard(db, id, user.uid)));
  polls.forEach((id) => document.getElementById('polls').append(pollCard(db, id, user.uid)));
}

/** One poll's card: each choice's count (the roll-up of poll-{poll}-{choice}) and a button to vote it. */
function pollCard(db, poll, uid) {
  const element = document.createElement('li');
  element.className = 'card poll';
  element.dataset.poll = poll;
  element.innerHTML = '<span class="name"></span><span></span><span class="error" role="alert"></span>';
  element.querySelector('.name').textContent = poll;
  const error = element.querySelector('.error');
  for (const choice of CHOICES) {
    const count = document.createElement('span');
    count.className = 'value';
    count.textContent = '–';
    const button = document.createElement('button');
    button.type = 'button';
    button.className = `like vote-${choice}`;
    button.textContent = choice;
    button.addEventListener('click', () => vote(db, poll, uid, choice).then(() => { error.textContent = ''; }, (err) => {
      error.textContent = `vote refused: ${err.code}`;
    }));
    element.insertBefore(button, error);
    element.insertBefore(count, error);
    listenToChoiceCount(db, poll, choice, (n) => {
      count.textContent = String(n);
      element.dataset[choice] = String(n);
    }, (err) => { error.textContent = `listener failed: ${err.code}`; });
  }
  listenToMyVote(db, poll, uid, (choice) => {
    element.dataset.mine = choice ?? '';
    for (const c of CHOICES) element.querySelector(`.vote-${c}`).classList.toggle('liked', c === choice);
  }, (err) => { error.textContent = `listener failed: ${err.code}`; });
  return element;
}

/** One post's card: its like count (the roll-up of likes-{post}) and this user's like, a toggle. */
function postCard(db, post, uid) {
  const element = document.createElement('li');
  element.className = 'card post';
  element.dataset.post = post;
  element.innerHTML = `
    <span class="name"></span>
    <span class="value" aria-live="polite">–</span>
    <button class="like" type="button">♥ Like</button>
    <span class="freshness">waiting for the roll-up…</span>
    <span class="pending"></span>
    <span class="error" role="alert"></span>`;
  element.querySelector('.name').textContent = post;
  const $ = (sel) => element.querySelector(sel);
  let liked = false;
  listenToLikeCount(db, post, ({ count, updatedAt }) => {
    $('.value').textContent = String(count);
    element.dataset.count = String(count);
    $('.freshness').textContent = updatedAt ? `likes counted from their documents, ${updatedAt.toLocaleTimeString()}` : 'no like counted yet';
  }, (err) => { $('.freshness').textContent = `listener failed: ${err.code}`; });
  listenToMyLike(db, post, uid, (mine) => {
    liked = mine.liked;
    element.dataset.liked = String(mine.liked);
    element.dataset.pending = String(mine.pending);
    $('.like').textContent = mine.liked ? '♥ Liked (unlike)' : '♥ Like';
    $('.like').classList.toggle('liked', mine.liked);
    $('.pending').textContent = mine.pending ? 'yours, not on the server yet (sent when online)' : '';
  }, (err) => { $('.error').textContent = `listener failed: ${err.code}`; });
  $('.like').addEventListener('click', async () => {
    try {
      await (liked ? unlike : like)(db, post, uid);
      $('.error').textContent = '';
    } catch (err) {
      $('.error').textContent = `${liked ? 'unlike' : 'like'} refused: ${err.code}`;
    }
  });
  return element;
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
