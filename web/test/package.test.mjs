// The web client as npm would publish it (npm pack), installed into a fresh Vite app: the package's
// metadata, its types checked by tsc, a production build with one Firebase SDK in it, and the built
// pages in headless Chromium against the stack (increments count once, liveCount takes the app's
// Firestore, the increment-only page loads no Firestore). The app's files: fixtures/vite-app/.
// Packages come from the npm cache that `npm ci` in web/ filled (--prefer-offline), at the versions
// of web/package-lock.json.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { closeBrowser, launchChromium } from './chromium.mjs';
import { eventually, exactCount, stack, uniqueID } from './stack.mjs';

const run = promisify(execFile);
const webDir = fileURLToPath(new URL('..', import.meta.url));
const lock = JSON.parse(await readFile(join(webDir, 'package-lock.json'), 'utf8'));
const locked = (name) => `${name}@${lock.packages[`node_modules/${name}`].version}`;
// The app's firebase: web/'s, or FIREBASE_VERSION's (e.g. 11, to check another major of the peer range;
// that one comes from the registry).
const firebaseSpec = process.env.FIREBASE_VERSION ? `firebase@${process.env.FIREBASE_VERSION}` : locked('firebase');

/** Runs a command in dir, failing with its output. */
async function sh(dir, cmd, ...args) {
  try {
    return (await run(cmd, args, { cwd: dir, maxBuffer: 64 << 20, timeout: 5 * 60_000 })).stdout;
  } catch (err) {
    throw new Error(`${cmd} ${args.join(' ')} in ${dir}: ${err.message}\n${err.stdout}\n${err.stderr}`);
  }
}

/** A fresh Vite app in a new directory, with the client installed by spec (a tarball or a folder), built. */
async function viteApp(name, clientSpec) {
  const dir = await mkdtemp(join(tmpdir(), `${name}-`));
  await cp(join(webDir, 'fixtures', 'vite-app'), dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  await sh(dir, 'npm', 'install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts',
    clientSpec, firebaseSpec, locked('vite'));
  await sh(dir, join('node_modules', '.bin', 'vite'), 'build', '--logLevel', 'warn');
  return dir;
}

/**
 * How many copies of Firestore's SDK a build's JavaScript holds: how often a message of its instance
 * check occurs, once per copy in firebase 10 to 12 (its host name occurs twice in firebase 10).
 */
async function firestoreCopies(dir) {
  const assets = join(dir, 'dist', 'assets');
  let js = '';
  for (const f of await readdir(assets)) if (f.endsWith('.js')) js += await readFile(join(assets, f), 'utf8');
  const count = (s) => js.split(s).length - 1;
  return count('Type does not match the expected instance');
}

let tarball;
let app;
let tmp;
before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'counters-pack-'));
  const out = await sh(webDir, 'npm', 'pack', './client', '--pack-destination', tmp, '--silent');
  tarball = join(tmp, out.trim().split('\n').pop());
  app = await viteApp('fresh-vite-app', tarball);
});
after(async () => {
  for (const d of [tmp, app]) if (d) await rm(d, { recursive: true, force: true });
});

test('the packed package: license, repository, the release\'s version, firebase as a bounded peer, only its files', async (t) => {
  const firebase = JSON.parse(await readFile(join(app, 'node_modules', 'firebase', 'package.json'), 'utf8')).version;
  t.diagnostic(`the app's firebase: ${firebase}`);
  const dir = join(app, 'node_modules', '@shardcount', 'counters-client');
  assert.ok((await lstat(dir)).isDirectory(), 'installed as a copy, not a link to the checkout');
  const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
  assert.equal(pkg.license, 'Apache-2.0');
  assert.match(pkg.repository.url, /github\.com\/shardcount\/counters/);
  const goVersion = /Version = "([^"]+)"/.exec(await readFile(join(webDir, '..', 'version', 'version.go'), 'utf8'))[1];
  assert.equal(pkg.version, goVersion);
  assert.match(pkg.peerDependencies.firebase, /^\^\d+\.0\.0( \|\| \^\d+\.0\.0)*$/, 'a bounded range of majors');
  const files = (await readdir(dir)).sort();
  assert.deepEqual(files, ['LICENSE', 'client.js', 'errors.js', 'increment.d.ts', 'increment.js', 'index.d.ts', 'index.js',
    'live-counter.js', 'package.json']);
});

test('index.d.ts and increment.d.ts type-check (tsc, strict) as an app uses them', async () => {
  await writeFile(join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true, noEmit: true, target: 'es2022', module: 'esnext', moduleResolution: 'bundler', lib: ['esnext', 'dom'], // firebase 12's types name Temporal (TypeScript 6's esnext)
      types: [], skipLibCheck: false, // our .d.ts files are library files too: check them
    },
    files: ['types-check.ts'],
  }));
  await sh(app, process.execPath, join(webDir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.');
});

test('the production build holds one Firebase SDK (a linked checkout, as the old docs said, holds two)', async () => {
  assert.equal(await firestoreCopies(app), 1);
  const linked = await viteApp('linked-vite-app', join(webDir, 'client'));
  try {
    assert.equal(await firestoreCopies(linked), 2, 'the marker no longer tells two SDKs apart');
  } finally {
    await rm(linked, { recursive: true, force: true });
  }
});

/** Serves the app's dist/, and /api/* from the stack's functions (as a Hosting rewrite would). */
async function serve(t, dist) {
  const types = { '.html': 'text/html', '.js': 'text/javascript' };
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname.startsWith('/api/')) {
      const body = await new Response(req).arrayBuffer().catch(() => undefined);
      const resp = await fetch(`${stack.functionsURL}/${url.pathname.slice(5)}${url.search}`, {
        method: req.method, headers: { 'Content-Type': req.headers['content-type'] ?? '', 'Idempotency-Key': req.headers['idempotency-key'] ?? '' },
        body: req.method === 'GET' ? undefined : Buffer.from(body ?? new ArrayBuffer(0)),
      });
      res.writeHead(resp.status, Object.fromEntries(resp.headers));
      res.end(Buffer.from(await resp.arrayBuffer()));
      return;
    }
    try {
      const data = await readFile(join(dist, url.pathname === '/' ? 'index.html' : url.pathname));
      res.writeHead(200, { 'Content-Type': types[extname(url.pathname)] ?? 'text/html' });
      res.end(data);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${server.address().port}`;
}

test('in Chromium against the stack: increments count once, liveCount and the roll-up read take the Firestore of the app; the increment-only page loads no Firestore', async (t) => {
  const origin = await serve(t, join(app, 'dist'));
  const browser = await launchChromium();
  t.after(() => closeBrowser(browser));
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err.message));
  const counter = uniqueID('vite');
  await page.goto(`${origin}/?project=${stack.project}&firestore=${stack.firestoreHost}`);
  for (let i = 0; i < 3; i++) await page.evaluate((c) => window.counters.increment(c), counter);
  assert.equal(await exactCount(counter), 3);
  // The client's Firestore calls take the app's Firestore (with another copy of the SDK, doc() throws
  // "Expected first argument to doc() to be ... FirebaseFirestore") and read the roll-up through it. The page reads it
  // once it exists: an emulator client read that saw it absent was seen to miss its creation for
  // 90 s (a flake of the example app's test too).
  await eventually('the roll-up of 3', async () => (await (await fetch(`${stack.functionsURL}/Count?counter=${counter}`)).json()).rollup?.count,
    (n) => n === 3);
  assert.deepEqual(await page.evaluate((c) => window.counters.firstLiveChange(c), counter), { value: 3, rollup: 3, error: null });
  assert.notEqual(await page.evaluate((c) => window.counters.rolledUpAt(c), counter), null);

  const only = await browser.newPage();
  only.on('pageerror', (err) => errors.push(err.message));
  const scripts = [];
  only.on('response', (resp) => {
    if (resp.request().resourceType() === 'script') scripts.push(resp.text().then((text) => ({ url: resp.url(), text })));
  });
  await only.goto(`${origin}/increment.html`);
  const answer = await only.evaluate((c) => window.counters.increment(c), counter);
  assert.equal(answer.attempts, 1);
  await eventually('the increment-only page\'s increment counts', () => exactCount(counter), (n) => n === 4);
  const loaded = await Promise.all(scripts);
  assert.ok(loaded.length > 0, 'no script loaded');
  for (const { url, text } of loaded) assert.ok(!text.includes('firestore.googleapis.com'), `${url} holds Firestore`);
  assert.deepEqual(errors, [], 'a page threw');
});
