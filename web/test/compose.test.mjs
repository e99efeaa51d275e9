// The counters' rules added to an app's ruleset (make rules, cmd/rules), loaded into the emulator:
// the app's own allows and denials (notes readable and writable by their owner only) are what they
// were under the app's rules alone, and the counters' rules hold (roll-ups readable, counters and
// shards closed; with the extension variant, UUID shards writable by small steps). The rules are
// loaded into the stack's project for this file only.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { getAuth } from 'firebase/auth';
import {
  collection, deleteDoc, doc, getDoc, getDocs, increment, limit, query, setDoc, updateDoc, where,
} from 'firebase/firestore';
import {
  adminSet, callFunction, eventually, firestoreClient, loadRules, signedInFirestoreClient, stack, uniqueID,
} from './stack.mjs';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const appRules = fileURLToPath(new URL('notes-app.rules', import.meta.url));
let dir;

before(async () => { dir = await mkdtemp(join(tmpdir(), 'compose-')); });
after(() => loadRules(stack.rulesFile));

/** Writes the app's rules with a variant's block added by the command and returns the file. */
async function combined(variant) {
  const text = execFileSync('go', ['run', './cmd/rules', '-app', appRules, '-variant', variant], { cwd: repo, encoding: 'utf8' });
  assert.match(text, /BEGIN distributed-counters rules/);
  const file = join(dir, `${variant}.rules`);
  await writeFile(file, text);
  return file;
}

/** 'allowed' or 'denied' (permission-denied); any other failure fails the test. */
async function outcome(op) {
  try {
    await op();
    return 'allowed';
  } catch (err) {
    if (err.code === 'permission-denied') return 'denied';
    throw err;
  }
}

/** Runs each operation of ops ({name: op}) in order and maps its name to its outcome. */
async function outcomes(ops) {
  const seen = {};
  for (const [name, op] of Object.entries(ops)) seen[name] = await outcome(op);
  return seen;
}

/** What the app's clients do with notes, under whatever rules are loaded. */
async function appOutcomes(t) {
  const owner = await signedInFirestoreClient(t);
  const other = await signedInFirestoreClient(t);
  const signedOut = firestoreClient(t);
  const uid = getAuth(owner.app).currentUser.uid;
  const note = doc(owner, 'notes', uniqueID('note'));
  const at = (db) => doc(db, note.path);
  return outcomes({
    'owner creates a note': () => setDoc(note, { owner: uid, text: 'mine' }),
    'owner reads it': () => getDoc(note),
    'owner updates it': () => updateDoc(note, { text: 'still mine' }),
    'owner lists their notes': () => getDocs(query(collection(owner, 'notes'), where('owner', '==', uid))),
    'another user reads it': () => getDoc(at(other)),
    'another user updates it': () => updateDoc(at(other), { text: 'taken' }),
    "another user creates a note in the owner's name": () => setDoc(doc(other, 'notes', uniqueID('forged')), { owner: uid }),
    'another user lists every note': () => getDocs(collection(other, 'notes')),
    'a signed-out client reads it': () => getDoc(at(signedOut)),
    'a client writes elsewhere': () => setDoc(doc(other, 'anything', 'else'), { a: 1 }),
    'owner deletes it': () => deleteDoc(note),
  });
}

const appExpected = {
  'owner creates a note': 'allowed',
  'owner reads it': 'allowed',
  'owner updates it': 'allowed',
  'owner lists their notes': 'allowed',
  'another user reads it': 'denied',
  'another user updates it': 'denied',
  "another user creates a note in the owner's name": 'denied',
  'another user lists every note': 'denied',
  'a signed-out client reads it': 'denied',
  'a client writes elsewhere': 'denied',
  'owner deletes it': 'allowed',
};

let alone;

test("the app's rules alone: owners only", async (t) => {
  await loadRules(appRules);
  alone = await appOutcomes(t);
  assert.deepEqual(alone, appExpected);
});

test("with the counters' block: the app's outcomes are unchanged and the counters' rules hold", async (t) => {
  await loadRules(await combined('counters'));
  assert.deepEqual(await appOutcomes(t), alone ?? appExpected, "the app's allows and denials");

  const db = firestoreClient(t);
  const id = uniqueID('composed');
  await callFunction('Increment', { counter: id, delta: 5 });
  await eventually('a client reads the roll-up', async () => (await getDoc(doc(db, 'rollups', id))).data()?.count, (c) => c === 5);
  assert.deepEqual(await outcomes({
    'get a roll-up': () => getDoc(doc(db, 'rollups', id)),
    'list 10 roll-ups': () => getDocs(query(collection(db, 'rollups'), limit(10))),
    'list every roll-up': () => getDocs(collection(db, 'rollups')),
    'overwrite a roll-up': () => setDoc(doc(db, 'rollups', id), { count: 1_000_000 }),
    'read a counter': () => getDoc(doc(db, 'counters', id)),
    'read a shard': () => getDoc(doc(db, 'counters', id, 'shards', '0')),
    'increment a shard': () => updateDoc(doc(db, 'counters', id, 'shards', '0'), { count: increment(1) }),
    'read a dedupe record': () => getDoc(doc(db, 'counter_dedupe', 'x')),
    'write a top list': () => setDoc(doc(db, 'tops', 'g_all'), { top: [] }),
  }), {
    'get a roll-up': 'allowed',
    'list 10 roll-ups': 'allowed',
    'list every roll-up': 'denied',
    'overwrite a roll-up': 'denied',
    'read a counter': 'denied',
    'read a shard': 'denied',
    'increment a shard': 'denied',
    'read a dedupe record': 'denied',
    'write a top list': 'denied',
  });
});

test("with the extension block: the app's outcomes are unchanged and only small UUID shard writes pass", async (t) => {
  await loadRules(await combined('extension-clients'));
  assert.deepEqual(await appOutcomes(t), alone ?? appExpected, "the app's allows and denials");

  const db = firestoreClient(t);
  const page = uniqueID('page');
  await adminSet(`pages/${page}`, {}); // a fold counts only on documents that exist
  const shard = (id) => doc(db, 'pages', page, '_counter_shards_', id);
  const mine = randomUUID();
  assert.deepEqual(await outcomes({
    'count a visit on its own shard': () => setDoc(shard(mine), { visits: increment(1) }, { merge: true }),
    'read its shard': () => getDoc(shard(mine)),
    'add 5 at once': () => setDoc(shard(mine), { visits: increment(5) }, { merge: true }),
    'write a shard that is not a UUID': () => setDoc(shard('mine'), { visits: 1 }),
    'write another field': () => setDoc(shard(randomUUID()), { likes: 1 }),
    'delete its shard': () => deleteDoc(shard(mine)),
    'read the page (the app says nothing of it)': () => getDoc(doc(db, 'pages', page)),
    'read a roll-up (not in this block)': () => getDoc(doc(db, 'rollups', 'x')),
  }), {
    'count a visit on its own shard': 'allowed',
    'read its shard': 'allowed',
    'add 5 at once': 'denied',
    'write a shard that is not a UUID': 'denied',
    'write another field': 'denied',
    'delete its shard': 'denied',
    'read the page (the app says nothing of it)': 'denied',
    'read a roll-up (not in this block)': 'denied',
  });
});
