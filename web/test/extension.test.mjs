// Apps that ship the Firebase firestore-counter extension's clients, served by FoldExtensionShards
// under firestore.extension-clients.rules (loaded into the stack's project for this file only). The
// clients write as the extension's web client does (clients/web/src/index.ts in firebase/extensions):
// a UUID per client, its own shard <doc>/_counter_shards_/<uuid>, set with merge of increment(n) at
// the field's path, a dotted field being nested maps. The counted value is the field on <doc>.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { collection, deleteDoc, doc, getDoc, getDocs, increment, setDoc } from 'firebase/firestore';
import { adminSet, firestoreClient, loadRules, stack, uniqueID } from './stack.mjs';

const variant = fileURLToPath(new URL('../../firestore.extension-clients.rules', import.meta.url));
const shards = '_counter_shards_';

before(() => loadRules(variant));
after(() => loadRules(stack.rulesFile));

/** The value a shard write sets: increment(n) at each dotted field's path of fields ({path: n}). */
function shardUpdate(fields) {
  const update = {};
  for (const [path, n] of Object.entries(fields)) {
    const keys = path.split('.');
    let m = update;
    for (const k of keys.slice(0, -1)) m = m[k] ??= {};
    m[keys.at(-1)] = increment(n);
  }
  return update;
}

/** One app: its own Firestore client and shard, incrementing as the extension's client does. */
function extensionClient(t, docPath) {
  const db = firestoreClient(t);
  const shardID = randomUUID();
  return {
    db,
    shardID,
    incrementBy: (fields) => setDoc(doc(db, docPath, shards, shardID), shardUpdate(fields), { merge: true }),
  };
}

/** Reads a document as the server does: its fields as plain values, or null. */
async function adminGet(path) {
  const url = `http://${stack.firestoreHost}/v1/projects/${stack.project}/databases/(default)/documents/${path}`;
  const resp = await fetch(url, { headers: { Authorization: 'Bearer owner' } });
  if (resp.status === 404) return null;
  if (!resp.ok) throw new Error(`admin get ${path}: HTTP ${resp.status} ${await resp.text()}`);
  const plain = (v) => v.integerValue !== undefined ? Number(v.integerValue) : v.doubleValue ?? v.stringValue
    ?? (v.mapValue ? Object.fromEntries(Object.entries(v.mapValue.fields ?? {}).map(([k, x]) => [k, plain(x)])) : v);
  return plain({ mapValue: { fields: (await resp.json()).fields ?? {} } });
}

/** Polls every 50 ms until ok(main document) or ms pass; resolves with the time it took. */
async function converges(what, path, ok, ms = 30_000) {
  const start = Date.now();
  let last;
  while (Date.now() - start < ms) {
    last = await adminGet(path);
    if (last && ok(last)) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: not within ${ms} ms; last seen ${JSON.stringify(last)}`);
}

test('many extension clients at once: nested fields, two fields in one shard, folded exactly into the main document', async (t) => {
  const post = `posts/${uniqueID('post')}`;
  await adminSet(post, {
    title: { stringValue: 'hello' }, likes: { integerValue: '10' },
    stats: { mapValue: { fields: { views: { integerValue: '3' }, label: { stringValue: 'kept' } } } },
  });
  const clients = Array.from({ length: 24 }, () => extensionClient(t, post));
  let likes = 0;
  let views = 0;
  await Promise.all(clients.map(async (c, i) => {
    for (let round = 0; round < 5; round++) {
      if (i % 3 === 0) {
        await c.incrementBy({ likes: 1, 'stats.views': 1 }); // shard(): two counters in one write
        likes++;
        views++;
      } else if (i % 3 === 1) {
        await c.incrementBy({ 'stats.views': 1 });
        views++;
      } else {
        await c.incrementBy({ likes: round === 4 ? -1 : 1 }); // an unlike is a step too
        likes += round === 4 ? -1 : 1;
      }
    }
  }));
  const want = { likes: 10 + likes, views: 3 + views };
  const took = await converges(`the main document reaches ${JSON.stringify(want)}`, post,
    (d) => d.likes === want.likes && d.stats?.views === want.views);
  t.diagnostic(`${clients.length} clients, ${likes + views} increments: the main document was exact ${took} ms after the last write`);
  assert.ok(took <= 5000, `converged ${took} ms after the last write; the design says about 2 s`);
  const main = await adminGet(post);
  assert.deepEqual(main, { title: 'hello', likes: want.likes, stats: { views: want.views, label: 'kept' } },
    'other fields untouched');

  // Once folded, a client's shard holds nothing: its latency-compensated view (main + its own shard
  // + partials) is the main document's value (extension-client.test.mjs measures it while writing).
  const c = clients[0];
  const own = await getDoc(doc(c.db, post, shards, c.shardID));
  assert.ok(!own.exists() || (own.data().likes ?? 0) === 0, `own shard emptied: ${JSON.stringify(own.data())}`);

  // The event bridge's answer times (every event of the stack so far), for the record.
  const statsURL = process.env.LOCALSTACK_EVENTS_STATS_URL;
  if (statsURL) {
    const stats = await (await fetch(statsURL)).json();
    const ms = (ns) => Math.round(ns / 1e6);
    t.diagnostic(`events so far: ${stats.delivered} delivered, ${stats.slow_answers} answered after 100 ms; answer time ` +
      `p50 ${ms(stats.answer_time.p50_ns)} ms, p99 ${ms(stats.answer_time.p99_ns)} ms, max ${ms(stats.answer_time.max_ns)} ms; ` +
      `instance time ${stats.instance_seconds.toFixed(1)} s`);
  }
});

test('an extension client may only step its counted fields on its own UUID shard', async (t) => {
  const page = `pages/${uniqueID('page')}`;
  const post = `posts/${uniqueID('post')}`;
  const missing = `pages/${uniqueID('missing')}`;
  await adminSet(page, { title: { stringValue: 'a page' } });
  await adminSet(post, { title: { stringValue: 'a post' } });
  const c = extensionClient(t, page);
  const p = extensionClient(t, post);
  await c.incrementBy({ visits: 1 });
  await c.incrementBy({ visits: -1 });
  await c.incrementBy({ visits: 1 });
  await p.incrementBy({ likes: 1, 'stats.views': 1 });
  await getDoc(doc(c.db, page, shards, c.shardID)); // its latency-compensated view reads its shard
  await getDoc(doc(c.db, page, shards, `\t${c.shardID.slice(0, 4)}`)); // and the partials
  const shard = (id) => doc(c.db, page, shards, id);
  const denied = {
    'a step of 2': () => c.incrementBy({ visits: 2 }),
    'a create holding 5': () => setDoc(shard(randomUUID()), { visits: 5 }),
    'setting the value': () => setDoc(shard(c.shardID), { visits: 1000 }, { merge: true }),
    'a string': () => setDoc(shard(randomUUID()), { visits: 'x' }),
    'another field': () => setDoc(shard(c.shardID), { visits: increment(1), note: 'x' }, { merge: true }),
    'a nested field not counted': () => p.incrementBy({ 'stats.other': 1 }),
    'a shard ID that is no UUID': () => setDoc(shard('mine'), { visits: increment(1) }, { merge: true }),
    'writing a partial': () => setDoc(shard(`\t${c.shardID.slice(0, 4)}`), { _updates_: [] }),
    'deleting a shard': () => deleteDoc(shard(c.shardID)),
    'listing the shards': () => getDocs(collection(c.db, page, shards)),
    'writing the main document': () => setDoc(doc(c.db, page), { visits: 100 }),
    'a collection that is no counter': () => setDoc(doc(c.db, 'users', 'u1', shards, randomUUID()), { visits: increment(1) }, { merge: true }),
    'a fraction (the field would become a double)': () => c.incrementBy({ visits: 0.5 }),
    'a new shard holding a fraction': () => setDoc(shard(randomUUID()), { visits: increment(0.5) }, { merge: true }),
    // Shards that hold nothing give the fold no event to act on: they would stay forever.
    'an empty shard': () => setDoc(shard(randomUUID()), {}),
    'a new shard holding zero': () => extensionClient(t, page).incrementBy({ visits: 0 }),
    'a new shard of zeros in every counted field': () => extensionClient(t, post).incrementBy({ likes: 0, 'stats.views': 0 }),
    'a write that changes nothing': () => c.incrementBy({ visits: 0 }),
  };
  for (const [what, op] of Object.entries(denied)) {
    await assert.rejects(op, (err) => err.code === 'permission-denied' || assert.fail(`${what}: ${err.code} ${err.message}`),
      `${what} must be denied`);
  }
  await converges('the post counts the allowed write', post, (d) => d.likes === 1 && d.stats?.views === 1);
  await converges('the page counts +1 -1 +1', page, (d) => d.visits === 1);
  assert.deepEqual(await adminGet(page), { title: 'a page', visits: 1 }, 'an integer, the other fields kept');

  // A shard under a page that does not exist yet: the fold creates no page (anyone could plant
  // documents in the app's collections); the shard waits, uncounted, its event redelivered, until
  // the app creates the page, and is then folded.
  const late = extensionClient(t, missing);
  await late.incrementBy({ visits: 1 });
  const waiting = `${missing}/${shards}/${late.shardID}`;
  await new Promise((r) => setTimeout(r, 2_000));
  assert.equal(await adminGet(missing), null, 'no page was planted');
  assert.equal((await adminGet(waiting))?.visits, 1, 'the shard under the missing page waits');
  await adminSet(missing, { title: { stringValue: 'created late' } });
  await converges('the page created late counts the shard that waited', missing, (d) => d.visits === 1);
});
