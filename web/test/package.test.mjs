// The web client as npm would publish it (npm pack, and npm publish --dry-run), installed into fresh
// Vite apps, one per major of firebase the peer range names: the package's metadata, its types checked
// by tsc under moduleResolution nodenext, node16 and bundler, and per major a production build with
// one Firebase SDK in it, driven in headless Chromium through `vite preview` against the stack (the
// count follows clicks, liveCount takes the app's Firestore and reports a refusal and a Firestore it cannot reach, the
// increment-only page loads no Firestore), then `npm ci` in the app. The app's files:
// fixtures/vite-app/. web/package-lock.json's firebase comes from the npm cache that `npm ci` in web/
// filled (--prefer-offline); the other majors' latest releases from the registry.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { cp, lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { closeBrowser, launchChromium } from './chromium.mjs';
import { callFunction, eventually, exactCount, stack, uniqueID } from './stack.mjs';

const run = promisify(execFile);
const webDir = fileURLToPath(new URL('..', import.meta.url));
const lock = JSON.parse(await readFile(join(webDir, 'package-lock.json'), 'utf8'));
const locked = (name) => `${name}@${lock.packages[`node_modules/${name}`].version}`;
const clientPkg = JSON.parse(await readFile(join(webDir, 'client', 'package.json'), 'utf8'));
// The majors the peer range names ("^10.0.0 || ^11.0.0 || ..."); FIREBASE_MAJORS=13 tests fewer.
const majors = process.env.FIREBASE_MAJORS?.split(',') ?? clientPkg.peerDependencies.firebase.split('||').map((r) => r.trim().replace(/^\^(\d+)\..*$/, '$1'));
const lockedFirebase = locked('firebase');
/** The firebase an app of major installs: web/'s when it is that major, else the major's latest. */
const firebaseSpec = (major) => (lockedFirebase.startsWith(`firebase@${major}.`) ? lockedFirebase : `firebase@${major}`);

/** Runs a command in dir, failing with its output. */
async function sh(dir, cmd, ...args) {
  try {
    return (await run(cmd, args, { cwd: dir, maxBuffer: 64 << 20, timeout: 5 * 60_000 })).stdout;
  } catch (err) {
    throw new Error(`${cmd} ${args.join(' ')} in ${dir}: ${err.message}\n${err.stdout}\n${err.stderr}`);
  }
}

/**
 * A fresh Vite app in a new directory, with the client installed by clientSpec (a tarball or a
 * folder) and firebase by firebase, built for the stack's emulator as docs/web-client.md says.
 */
async function viteApp(name, clientSpec, firebase) {
  const dir = await mkdtemp(join(tmpdir(), `${name}-`));
  await cp(join(webDir, 'fixtures', 'vite-app'), dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  await sh(dir, 'npm', 'install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts',
    clientSpec, firebase, locked('vite'));
  await run(join(dir, 'node_modules', '.bin', 'vite'), ['build', '--logLevel', 'warn'], {
    cwd: dir, maxBuffer: 64 << 20, timeout: 5 * 60_000,
    env: { ...process.env, VITE_FIRESTORE_EMULATOR: stack.firestoreHost, VITE_FIREBASE_PROJECT: stack.project },
  }).catch((err) => { throw new Error(`vite build in ${dir}: ${err.message}\n${err.stdout}\n${err.stderr}`); });
  return dir;
}

/**
 * How many copies of Firestore's SDK a build's JavaScript holds: how often a message of its instance
 * check occurs, once per copy in firebase 10 to 13.
 */
async function firestoreCopies(dir) {
  const assets = join(dir, 'dist', 'assets');
  let js = '';
  for (const f of await readdir(assets)) if (f.endsWith('.js')) js += await readFile(join(assets, f), 'utf8');
  const count = (s) => js.split(s).length - 1;
  return count('Type does not match the expected instance');
}

/** A free TCP port on 127.0.0.1 (for `vite preview --strictPort`). */
async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Runs `vite preview` of dir's build, /api/* sent to the stack's functions; returns its origin. */
async function preview(t, dir) {
  const port = await freePort();
  const child = spawn(join(dir, 'node_modules', '.bin', 'vite'), ['preview', '--host', '127.0.0.1', '--port', String(port), '--strictPort'], {
    cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, COUNTERS_FUNCTIONS_URL: stack.functionsURL },
  });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  t.after(() => { try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ } });
  const origin = `http://127.0.0.1:${port}`;
  await eventually(`vite preview on ${origin} (${output})`, () => fetch(origin).then((r) => r.status, () => 0), (s) => s === 200);
  return origin;
}

let tarball;
let tmp;
const apps = new Map(); // major -> a built app's directory
before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'counters-pack-'));
  const out = await sh(webDir, 'npm', 'pack', './client', '--pack-destination', tmp, '--silent');
  tarball = join(tmp, out.trim().split('\n').pop());
});
after(async () => {
  for (const d of [tmp, ...apps.values()]) if (d) await rm(d, { recursive: true, force: true });
});

/** The app of major, installed and built once. */
async function appOf(major) {
  if (!apps.has(major)) apps.set(major, await viteApp(`fresh-vite-app-${major}`, tarball, firebaseSpec(major)));
  return apps.get(major);
}

test('the package is ready to publish: npm publish --dry-run; license, repository, the release\'s version, firebase a peer of 10 to 13, exports, types, README', async () => {
  await sh(webDir, 'npm', 'publish', '--dry-run', tarball);
  const app = await appOf(majors.at(-1));
  const dir = join(app, 'node_modules', '@shardcount', 'counters-client');
  assert.ok((await lstat(dir)).isDirectory(), 'installed as a copy, not a link to the checkout');
  const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
  assert.equal(pkg.license, 'Apache-2.0');
  assert.match(pkg.repository.url, /github\.com\/shardcount\/counters/);
  const goVersion = /Version = "([^"]+)"/.exec(await readFile(join(webDir, '..', 'version', 'version.go'), 'utf8'))[1];
  assert.equal(pkg.version, goVersion);
  assert.match(pkg.peerDependencies.firebase, /^\^\d+\.0\.0( \|\| \^\d+\.0\.0)*$/, 'a bounded range of majors');
  for (const major of [10, 11, 12, 13]) assert.ok(pkg.peerDependencies.firebase.split(' || ').includes(`^${major}.0.0`), `firebase ${major} outside the peer range`);
  assert.deepEqual(Object.keys(pkg.exports), ['.', './increment', './package.json']);
  assert.equal(pkg.exports['.'].types, './index.d.ts');
  const files = (await readdir(dir)).sort();
  assert.deepEqual(files, ['LICENSE', 'README.md', 'client.js', 'errors.js', 'increment.d.ts', 'increment.js', 'index.d.ts', 'index.js',
    'live-counter.js', 'package.json']);
});

test('every exported name type-checks (tsc, strict) under moduleResolution nodenext, node16 and bundler', async (t) => {
  const app = await appOf(majors.at(-1));
  for (const [module, moduleResolution] of [['nodenext', 'nodenext'], ['node16', 'node16'], ['esnext', 'bundler']]) {
    await t.test(moduleResolution, async () => {
      await writeFile(join(app, 'tsconfig.json'), JSON.stringify({
        compilerOptions: {
          strict: true, noEmit: true, target: 'es2022', module, moduleResolution, lib: ['esnext', 'dom'], // firebase 12's types name Temporal (TypeScript 6's esnext)
          types: [], skipLibCheck: false, // our .d.ts files are library files too: check them
        },
        files: ['types-check.ts'],
      }));
      await sh(app, process.execPath, join(webDir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.');
    });
  }
});

test('a linked checkout (as the old docs said) bundles two Firebase SDKs: the marker of SDK copies tells them apart', async () => {
  const linked = await viteApp('linked-vite-app', join(webDir, 'client'), lockedFirebase);
  try {
    assert.equal(await firestoreCopies(linked), 2, 'the marker no longer tells two SDKs apart');
  } finally {
    await rm(linked, { recursive: true, force: true });
  }
});

for (const major of majors) {
  test(`firebase ${major}: one SDK in the build; in Chromium through vite preview, the count follows clicks, liveCount takes the app's Firestore and reports a refusal and a Firestore it cannot reach, the increment-only page loads no Firestore; then npm ci`, async (t) => {
    const app = await appOf(major);
    const firebase = JSON.parse(await readFile(join(app, 'node_modules', 'firebase', 'package.json'), 'utf8')).version;
    t.diagnostic(`the app's firebase: ${firebase}`);
    assert.ok(firebase.startsWith(`${major}.`), `firebase ${firebase} installed for major ${major}`);
    assert.equal(await firestoreCopies(app), 1);

    const origin = await preview(t, app);
    const browser = await launchChromium();
    t.after(() => closeBrowser(browser));
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (err) => errors.push(err.message));
    const counter = uniqueID(`vite${major}`);
    // The roll-up exists before the page listens: an emulator listener that saw a document absent
    // was seen to miss its creation for 90 s (a flake of the example app's test too).
    await callFunction('Increment', { counter });
    const rollupOf = async () => (await (await fetch(`${stack.functionsURL}/Count?counter=${counter}`)).json()).rollup?.count;
    await eventually('the roll-up of 1', rollupOf, (n) => n === 1);
    await page.goto(`${origin}/?counter=${counter}`);
    await eventually('#value shows the roll-up', () => page.textContent('#value'), (text) => text === '1');
    for (let i = 0; i < 3; i++) await page.click('#like');
    await eventually('3 clicks counted', () => exactCount(counter), (n) => n === 4);
    // The page shows liveCount's value: this client's clicks at once, then the roll-up's count of them.
    await eventually('#value shows the 3 clicks', () => page.textContent('#value'), (text) => text === '4');
    await eventually('the roll-up of 4', rollupOf, (n) => n === 4);
    await eventually('a new liveCount shows the roll-up of 4', () => page.evaluate((c) => window.counters.firstLiveChange(c), counter),
      (change) => change.value === 4 && change.rollup === 4 && change.error === null);
    assert.notEqual(await page.evaluate((c) => window.counters.rolledUpAt(c), counter), null);
    assert.equal(await page.evaluate((c) => window.counters.unreachableError(c), counter), 'ListenTimeoutError');
    assert.equal(await page.evaluate((c) => window.counters.refusedError(c), counter), 'permission-denied');

    const only = await browser.newPage();
    only.on('pageerror', (err) => errors.push(err.message));
    const scripts = [];
    only.on('response', (resp) => {
      if (resp.request().resourceType() === 'script') scripts.push(resp.text().then((text) => ({ url: resp.url(), text })));
    });
    await only.goto(`${origin}/increment.html`);
    const answer = await only.evaluate((c) => window.counters.increment(c), counter);
    assert.equal(answer.attempts, 1);
    await eventually('the increment-only page\'s increment counts', () => exactCount(counter), (n) => n === 5);
    const loaded = await Promise.all(scripts);
    assert.ok(loaded.length > 0, 'no script loaded');
    for (const { url, text } of loaded) assert.ok(!text.includes('firestore.googleapis.com'), `${url} holds Firestore`);
    assert.deepEqual(errors, [], 'a page threw');

    // The app's lockfile installs again as it is (a firebase outside the peer range fails with ERESOLVE).
    await sh(app, 'npm', 'ci', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts');
  });
}
