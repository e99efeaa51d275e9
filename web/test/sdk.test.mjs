// The Firebase JS SDK, as an app uses it, against the local stack with production's firestore.rules:
// a listener on rollups/{id} follows HTTP increments; everything else a client might try is denied.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  collection, deleteDoc, doc, getDoc, getDocs, increment, limit, onSnapshot, orderBy, query, setDoc, updateDoc,
} from 'firebase/firestore';
import { callFunction, eventually, firestoreClient, idToken, restQuery, uniqueID } from './stack.mjs';

test('a roll-up listener sees the count follow HTTP increments', async (t) => {
  const db = firestoreClient(t);
  const id = uniqueID('listened');
  const seen = [];
  const unsubscribe = onSnapshot(doc(db, 'rollups', id), (snap) => {
    if (snap.exists()) seen.push(snap.data());
  });
  t.after(unsubscribe);
  let total = 0;
  for (const delta of [1, 2, 3, 4]) {
    await callFunction('Increment', { counter: id, delta });
    total += delta;
  }
  await eventually('the listener sees the total', async () => seen.at(-1)?.count, (c) => c === total);
  const last = seen.at(-1);
  assert.equal(typeof last.updated_at?.toMillis, 'function', 'updated_at is a Firestore Timestamp');
  assert.ok(seen.every((d, i) => i === 0 || d.count >= seen[i - 1].count), `counts only grow: ${seen.map((d) => d.count)}`);
});

test('clients may get roll-ups and list at most 100, and nothing else', async (t) => {
  const db = firestoreClient(t);
  const id = uniqueID('guarded');
  await callFunction('Increment', { counter: id, delta: 7 });
  await eventually('the roll-up exists', async () => (await getDoc(doc(db, 'rollups', id))).data()?.count, (c) => c === 7);
  // Bounded listing is a documented choice (firestore.rules, docs/api.md): leaderboards need it.
  for (const n of [10, 100]) {
    const listed = await getDocs(query(collection(db, 'rollups'), orderBy('count', 'desc'), limit(n)));
    assert.ok(listed.size >= 1 && listed.size <= n, `a client may list up to ${n} roll-ups`);
  }

  const denied = {
    'list roll-ups without a limit': () => getDocs(collection(db, 'rollups')),
    'list roll-ups with a limit over 100': () => getDocs(query(collection(db, 'rollups'), limit(101))),
    'listen to every roll-up': () => new Promise((resolve, reject) => {
      // The first snapshot may come from the empty local cache; only the server's answer counts.
      const stop = onSnapshot(collection(db, 'rollups'), { includeMetadataChanges: true }, (snap) => {
        if (!snap.metadata.fromCache) { stop(); resolve(); }
      }, reject);
    }),
    'read a counter': () => getDoc(doc(db, 'counters', id)),
    'list counters': () => getDocs(collection(db, 'counters')),
    'read a shard': () => getDoc(doc(db, 'counters', id, 'shards', '0')),
    'list shards': () => getDocs(collection(db, 'counters', id, 'shards')),
    'increment a shard': () => updateDoc(doc(db, 'counters', id, 'shards', '0'), { count: increment(1) }),
    'create a shard': () => setDoc(doc(db, 'counters', id, 'shards', '99'), { count: 1000 }),
    'create a counter': () => setDoc(doc(db, 'counters', uniqueID('forged')), { num_shards: 1 }),
    'change num_shards': () => updateDoc(doc(db, 'counters', id), { num_shards: 1 }),
    'read a caller total': () => getDoc(doc(db, 'counters', id, 'callers', 'x')),
    'read a dedupe record': () => getDoc(doc(db, 'counter_dedupe', 'x')),
    'list dedupe records': () => getDocs(collection(db, 'counter_dedupe')),
    'write a dedupe record': () => setDoc(doc(db, 'counter_dedupe', 'x'), { key: 'stolen' }),
    'overwrite a roll-up': () => setDoc(doc(db, 'rollups', id), { count: 1_000_000 }),
    'update a roll-up': () => updateDoc(doc(db, 'rollups', id), { count: increment(1) }),
    'delete a roll-up': () => deleteDoc(doc(db, 'rollups', id)),
    'create a roll-up': () => setDoc(doc(db, 'rollups', uniqueID('forged')), { count: 1 }),
    'write elsewhere': () => setDoc(doc(db, 'anything', 'else'), { a: 1 }),
  };
  for (const [what, op] of Object.entries(denied)) {
    await assert.rejects(op, (err) => {
      assert.equal(err.code, 'permission-denied', `${what}: ${err.code} ${err.message}`);
      return true;
    }, `${what} must be denied`);
  }
  const err = await getDoc(doc(db, 'counters', id, 'shards', '0')).catch((e) => e);
  t.diagnostic(`a denied client sees: code=${err.code} message=${JSON.stringify(err.message)}`);
  assert.equal((await getDoc(doc(db, 'rollups', id))).data().count, 7, 'the roll-up is unchanged');
});

// The SDKs have no offset, but Firestore's REST API takes one from anyone, and the documents an
// offset skips are billed as reads: the rules bound limit and offset together.
test('a roll-up query may skip and return at most 100 documents together, offset included', async (t) => {
  const token = await idToken(t);
  const page = (limit, offset) => ({
    from: [{ collectionId: 'rollups' }], orderBy: [{ field: { fieldPath: 'count' }, direction: 'DESCENDING' }],
    limit, ...(offset === undefined ? {} : { offset }),
  });
  for (const [who, auth] of [['signed out', undefined], ['signed in', token]]) {
    for (const [limit, offset] of [[10, undefined], [10, 0], [10, 90], [1, 99]]) {
      const { status, body } = await restQuery(page(limit, offset), auth);
      assert.equal(status, 200, `${who}, limit ${limit} offset ${offset}: ${JSON.stringify(body)}`);
    }
    for (const [limit, offset] of [[10, 91], [1, 100], [10, 1_000_000]]) {
      const { status, body } = await restQuery(page(limit, offset), auth);
      assert.equal(status, 403, `${who}, limit ${limit} offset ${offset} must be denied: ${JSON.stringify(body).slice(0, 300)}`);
    }
    const { status } = await restQuery({ from: [{ collectionId: 'rollups' }], offset: 5 }, auth);
    assert.equal(status, 403, `${who}: an offset without a limit must be denied`);
  }
});

test('apps read a counter\'s windows on its roll-up and listen to its group\'s top list, and write neither', async (t) => {
  const db = firestoreClient(t);
  const id = uniqueID('ranked');
  const group = uniqueID('group');
  await callFunction('ConfigureCounter', { counter: id, windows: ['day'], group }, 'PUT');
  await callFunction('Increment', { counter: id, delta: 4 });
  const today = new Date().toISOString().slice(0, 10);
  await eventually('the roll-up holds today', async () => (await getDoc(doc(db, 'rollups', id))).data()?.windows?.day,
    (day) => day?.count === 4 && day?.bucket === today);
  // The emulator's listener of a document it has seen missing can miss its creation for minutes
  // (seen in CI and here): the listener starts once a read shows the list.
  await eventually('the day list is written', async () => (await getDoc(doc(db, 'tops', `${group}_day`))).data()?.top,
    (top) => top?.[0]?.counter === id);
  const lists = [];
  const unsubscribe = onSnapshot(doc(db, 'tops', `${group}_day`), (snap) => lists.push(snap.data()));
  t.after(unsubscribe);
  await eventually('the listener sees the day list', async () => lists.at(-1)?.top,
    (top) => top?.[0]?.counter === id && top[0].count === 4);
  assert.equal(lists.at(-1).bucket, today);
  // Each list is refreshed on its own, each within about a roll-up interval.
  await eventually('the all-time list ranks it', async () => (await getDoc(doc(db, 'tops', `${group}_all`))).data()?.top,
    (top) => top?.length === 1 && top[0].counter === id && top[0].count === 4);
  const denied = {
    'list top lists': () => getDocs(query(collection(db, 'tops'), limit(10))),
    'overwrite a top list': () => setDoc(doc(db, 'tops', `${group}_all`), { top: [] }),
    'create a top list': () => setDoc(doc(db, 'tops', uniqueID('forged')), { top: [] }),
    'delete a top list': () => deleteDoc(doc(db, 'tops', `${group}_all`)),
    'read a member': () => getDoc(doc(db, 'counters', id, 'members', 'x')),
  };
  for (const [what, op] of Object.entries(denied)) {
    await assert.rejects(op, (err) => {
      assert.equal(err.code, 'permission-denied', `${what}: ${err.code} ${err.message}`);
      return true;
    }, `${what} must be denied`);
  }
});
