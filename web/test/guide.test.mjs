// The opt-in rules variant firestore.guide-clients.rules, with the Firebase guide's own client code:
// incrementCounter updates a random shard with increment(1). A signed-in client may do that and
// nothing else, on a counter whose shards ConfigureCounter created, and the roll-up picks its writes
// up. The variant is loaded into the stack's project for this file only.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  collection, deleteDoc, doc, getDoc, getDocs, increment, onSnapshot, setDoc, updateDoc,
} from 'firebase/firestore';
import {
  adminSet, callFunction, eventually, exactCount, firestoreClient, idToken, loadRules, restQuery, signedInFirestoreClient, stack, uniqueID,
} from './stack.mjs';

const variant = fileURLToPath(new URL('../../firestore.guide-clients.rules', import.meta.url));

before(() => loadRules(variant));
after(() => loadRules(stack.rulesFile));

// From the Firebase guide "Distributed counters" (Web modular API), unchanged.
function incrementCounter(db, ref, num_shards) {
  // Select a shard of the counter at random
  const shard_id = Math.floor(Math.random() * num_shards).toString();
  const shard_ref = doc(ref, 'shards', shard_id);

  // Update count
  return updateDoc(shard_ref, 'count', increment(1));
}

test("the guide's incrementCounter counts, and the roll-up picks it up", async (t) => {
  const db = await signedInFirestoreClient(t);
  const id = uniqueID('guide');
  await callFunction('ConfigureCounter', { counter: id, num_shards: 4 });
  const seen = [];
  t.after(onSnapshot(doc(db, 'rollups', id), (snap) => snap.exists() && seen.push(snap.data().count)));
  for (let i = 0; i < 6; i++) await incrementCounter(db, doc(db, 'counters', id), 4);
  await eventually('the roll-up counts the six client increments', async () => seen.at(-1), (c) => c === 6);
  const exact = await fetch(`${stack.functionsURL}/Count?counter=${id}`).then((r) => r.json());
  assert.equal(exact.count, 6, 'Count agrees');
});

test('a guide client may do nothing else', async (t) => {
  const db = await signedInFirestoreClient(t);
  const signedOut = firestoreClient(t);
  const id = uniqueID('guide-denied');
  await callFunction('ConfigureCounter', { counter: id, num_shards: 4 });
  const shard = (n) => doc(db, 'counters', id, 'shards', n);
  await updateDoc(shard('3'), 'count', increment(-1)); // an unlike is a step too
  const denied = {
    'a signed-out client': () => updateDoc(doc(signedOut, 'counters', id, 'shards', '0'), 'count', increment(1)),
    'listing roll-ups without a limit': () => getDocs(collection(db, 'rollups')),
    'a step of 2': () => updateDoc(shard('0'), 'count', increment(2)),
    'setting the count': () => updateDoc(shard('0'), { count: 1000 }),
    'a shard beyond num_shards': () => updateDoc(shard('4'), 'count', increment(1)),
    'creating a shard': () => setDoc(shard('7'), { count: 1 }),
    'another ID of shard 3': () => setDoc(shard('03'), { count: 1 }),
    'another field': () => updateDoc(shard('1'), { count: increment(1), touched_minute: 0 }),
    'a counter that does not exist': () => updateDoc(doc(db, 'counters', uniqueID('nope'), 'shards', '0'), 'count', increment(1)),
    'deleting a shard': () => deleteDoc(shard('2')),
    'reading a shard': () => getDoc(shard('2')),
    'changing num_shards': () => updateDoc(doc(db, 'counters', id), { num_shards: 100 }),
    'writing the roll-up': () => setDoc(doc(db, 'rollups', id), { count: 99 }),
  };
  for (const [what, op] of Object.entries(denied)) {
    await assert.rejects(op, (err) => err.code === 'permission-denied' || assert.fail(`${what}: ${err.code} ${err.message}`),
      `${what} must be denied`);
  }
  // As under the counters' rules (sdk.test.mjs): limit and offset together at most 100.
  const token = await idToken(t);
  for (const [limit, offset, status] of [[10, 90, 200], [10, 91, 403], [1, 1_000_000, 403]]) {
    const answer = await restQuery({ from: [{ collectionId: 'rollups' }], limit, offset }, token);
    assert.equal(answer.status, status, `listing roll-ups with limit ${limit} offset ${offset}`);
  }
  const exact = await fetch(`${stack.functionsURL}/Count?counter=${id}`).then((r) => r.json());
  assert.equal(exact.count, -1, 'only the allowed unlike counted');
});

test("a guide client may not write a collection counter's shards", async (t) => {
  const db = await signedInFirestoreClient(t);
  const post = uniqueID('guide-post');
  await adminSet(`posts/${post}/likes/u1`, { at: { integerValue: '1' } });
  await eventually('the like makes its collection counter', () => exactCount(`likes-${post}`), (n) => n === 1);
  await assert.rejects(() => updateDoc(doc(db, 'counters', `likes-${post}`, 'shards', '0'), 'count', increment(1)),
    (err) => err.code === 'permission-denied', "a collection counter's shard must be closed to clients");
});

test("a guide client may not write the SLO canary's shards", async (t) => {
  const db = await signedInFirestoreClient(t);
  // The canary as the scheduled sweep makes it (one shard), created here if no tick has yet, else
  // left as it is: increments of 0 and a maximum of 1 change nothing that exists.
  const name = (path) => `projects/${stack.project}/databases/(default)/documents/${path}`;
  const transform = (path, fieldPath, op) => ({ transform: { document: name(path), fieldTransforms: [{ fieldPath, ...op }] } });
  const resp = await fetch(`http://${stack.firestoreHost}/v1/projects/${stack.project}/databases/(default)/documents:commit`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer owner' },
    body: JSON.stringify({ writes: [
      transform('counters/_counters_canary', 'num_shards', { maximum: { integerValue: '1' } }),
      transform('counters/_counters_canary/shards/0', 'count', { increment: { integerValue: '0' } }),
    ] }),
  });
  assert.ok(resp.ok, `making the canary: HTTP ${resp.status} ${await resp.text()}`);
  await assert.rejects(() => updateDoc(doc(db, 'counters', '_counters_canary', 'shards', '0'), 'count', increment(-1)),
    (err) => err.code === 'permission-denied', "the canary's shard must be closed to clients");
});

test('every shard of a ConfigureCounter counter exists; a counter made by Increment lacks some', async (t) => {
  const db = await signedInFirestoreClient(t);
  const configured = uniqueID('guide-configured');
  await callFunction('ConfigureCounter', { counter: configured, num_shards: 3 });
  for (const n of ['0', '1', '2']) await updateDoc(doc(db, 'counters', configured, 'shards', n), 'count', increment(1));

  // Increment creates a counter with DEFAULT_NUM_SHARDS (10) shards in num_shards but writes only
  // the shard it picks: the guide's update of another one finds no document and is refused. Hence
  // the documented rule: create the counters guide clients write with ConfigureCounter.
  const incremented = uniqueID('guide-incremented');
  await callFunction('Increment', { counter: incremented });
  let refused = 0;
  for (let n = 0; n < 10; n++) {
    await updateDoc(doc(db, 'counters', incremented, 'shards', String(n)), 'count', increment(1)).catch((err) => {
      assert.ok(['permission-denied', 'not-found'].includes(err.code), `${err.code} ${err.message}`);
      refused++;
    });
  }
  assert.equal(refused, 9, 'all shards but the one Increment wrote are missing');
  const exact = await fetch(`${stack.functionsURL}/Count?counter=${configured}`).then((r) => r.json());
  assert.equal(exact.count, 3, 'each of the three configured shards took its increment');
});
