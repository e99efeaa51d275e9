// The firestore-counter extension's own web client (clients/web/src/index.ts in firebase/extensions),
// compiled unchanged from its public source into a scratch folder (web/test-results/, not committed),
// against FoldExtensionShards under firestore.extension-clients.rules. The source is read from
// FIRESTORE_COUNTER_WEB_CLIENT (a path to that index.ts at the pinned commit; its SHA-256 must be the
// pinned one): it is no package of any registry, so nothing here downloads it.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import firebase from 'firebase/compat/app';
import 'firebase/compat/firestore';
import { adminSet, loadRules, stack, uniqueID } from './stack.mjs';

const variant = fileURLToPath(new URL('../../firestore.extension-clients.rules', import.meta.url));
const commit = '58896fffd88d4ed25b016991c74c23a8805462d9';
const sourceSHA256 = '7124d004a7c9822b82e4344f0edfdd6a782d916fed8144be199cd048be8d17de';
// The fold interval of the stack's functions (EXTENSION_FOLD_INTERVAL's default).
const foldInterval = 1000;

before(() => loadRules(variant));
after(() => loadRules(stack.rulesFile));

/** The extension's web client module, compiled from its unchanged source. */
async function extensionWebClient() {
  const path = process.env.FIRESTORE_COUNTER_WEB_CLIENT;
  if (!path) {
    throw new Error('set FIRESTORE_COUNTER_WEB_CLIENT to firestore-counter/clients/web/src/index.ts of ' +
      `firebase/extensions at ${commit}`);
  }
  const source = await readFile(path, 'utf8');
  const sha = createHash('sha256').update(source).digest('hex');
  assert.equal(sha, sourceSHA256, `${path} is not the pinned index.ts (${commit})`);
  // Under web/, so that its imports (firebase, uuid) resolve to web/node_modules.
  const dir = fileURLToPath(new URL('../test-results/extension-web-client/', import.meta.url));
  await mkdir(dir, { recursive: true });
  await writeFile(`${dir}index.ts`, source);
  await build({
    entryPoints: [`${dir}index.ts`], outfile: `${dir}index.mjs`, bundle: true, format: 'esm', platform: 'node',
    external: ['firebase', 'firebase/*', 'uuid'], logLevel: 'warning',
  });
  // The client keeps its shard ID in a browser cookie.
  globalThis.document ??= { cookie: '' };
  return import(`${dir}index.mjs`);
}

test("the extension's web client: its live view exceeds its own increments only while a write is in flight, by what folds took from its shard meanwhile", async (t) => {
  const { Counter } = await extensionWebClient();
  const app = firebase.initializeApp({ projectId: stack.project, apiKey: 'local-emulator' });
  t.after(() => app.delete());
  const db = firebase.firestore();
  const [host, port] = stack.firestoreHost.split(':');
  db.useEmulator(host, Number(port));
  const page = `pages/${uniqueID('page')}`;
  await adminSet(page, { visits: { integerValue: '0' } });
  const counter = new Counter(db.doc(page), 'visits');

  // The client's own writes: how many it made, which are in flight (by when they were sent), and
  // when each was sent and acknowledged.
  let issued = 0;
  const inFlight = new Set();
  const acked = new Map(); // sent → acknowledged
  // What the folds took: the main document's value as the client sees it, and when it changed.
  const folds = [];
  let main = 0;
  const unsubscribe = db.doc(page).onSnapshot((snap) => {
    const v = snap.get('visits') ?? 0;
    if (v !== main) folds.push({ at: performance.now(), took: v - main });
    main = v;
  });
  t.after(unsubscribe);
  const views = [];
  counter.onSnapshot((snap) => {
    const at = performance.now();
    views.push({ at, value: snap.data(), issued, inFlight: inFlight.size, oldest: Math.min(...inFlight) });
  });

  const stop = performance.now() + 6 * foldInterval;
  while (performance.now() < stop) {
    const sent = performance.now();
    inFlight.add(sent);
    issued++;
    await counter.incrementBy(1);
    inFlight.delete(sent);
    acked.set(sent, performance.now());
  }
  // Once every write is acknowledged and folded, the view is exact.
  const deadline = Date.now() + 30_000;
  while (!(views.at(-1)?.value === issued && main === issued) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(main, issued, `the main document holds ${main}, want every increment (${issued})`);
  assert.equal(views.at(-1).value, issued, 'the settled view is exact');

  let most = 0;
  let longest = 0;
  let since = null;
  for (const v of views) {
    const over = v.value - v.issued;
    // A write is applied to the SDK's local view asynchronously after the call that made it: a
    // snapshot raised meanwhile (by a fold) may lack the writes in flight, and nothing else.
    assert.ok(over >= -v.inFlight,
      `the view showed ${v.value} with ${v.issued} increments made and ${v.inFlight} in flight: below the count`);
    if (over > 0) {
      assert.ok(v.inFlight > 0, `the view exceeded the count by ${over} with no write in flight`);
      // What folds took while the oldest write in flight was: the most the view may exceed. This
      // test's own listener on <doc> may hear of a fold after the client's view does, so the folds
      // are those it heard of from the write's sending to its acknowledgement.
      const allowed = folds.filter((f) => f.at >= v.oldest && f.at <= acked.get(v.oldest))
        .reduce((a, f) => a + f.took, 0);
      assert.ok(over <= allowed, `the view exceeded the count by ${over}, more than the folds took (${allowed}) while its write was in flight`);
      most = Math.max(most, over);
      since ??= v.at;
    } else if (since !== null) {
      longest = Math.max(longest, v.at - since);
      since = null;
    }
  }
  t.diagnostic(`${issued} increments, ${folds.length} folds seen, ${views.length} views: ` +
    `the view exceeded the count by up to ${most}, for up to ${Math.round(longest)} ms at a time`);
});
