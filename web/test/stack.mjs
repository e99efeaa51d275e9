// What the tests know about the local stack that `make test` started (bin/localstack exec), and small
// helpers over it: HTTP calls to the functions, Firebase JS SDK clients of the Firestore emulator, and
// loading security rules.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { deleteApp, initializeApp } from 'firebase/app';
import { connectAuthEmulator, getAuth, signInAnonymously } from 'firebase/auth';
import { connectFirestoreEmulator, getFirestore, setLogLevel } from 'firebase/firestore';

// Denied requests are what some tests expect: keep the SDK's own logging of them out of the report.
setLogLevel('silent');

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests with \`make test\`, which starts the local stack`);
  return value;
}

export const stack = {
  project: required('GOOGLE_CLOUD_PROJECT'),
  firestoreHost: required('FIRESTORE_EMULATOR_HOST'),
  functionsURL: required('LOCALSTACK_FUNCTIONS_URL'),
  appURL: required('LOCALSTACK_APP_URL'),
  rulesFile: required('LOCALSTACK_RULES_FILE'),
  authHost: required('FIREBASE_AUTH_EMULATOR_HOST'),
};

/** A counter ID no other test uses. */
export function uniqueID(prefix) {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

/** POSTs body as JSON to a function and returns the decoded answer, failing on a non-200. */
export async function callFunction(name, body, method = 'POST') {
  const resp = await fetch(`${stack.functionsURL}/${name}`, {
    method,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer = await resp.json();
  if (!resp.ok) throw new Error(`${name} ${JSON.stringify(body)}: HTTP ${resp.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** The exact value of counter from the Count function at functionsURL (no Origin): 0 before its first increment. */
export async function exactCount(counter, functionsURL = stack.functionsURL) {
  const resp = await fetch(`${functionsURL}/Count?counter=${encodeURIComponent(counter)}`);
  if (resp.status === 404) return 0;
  const answer = await resp.json();
  if (resp.status !== 200) throw new Error(`Count ${counter}: HTTP ${resp.status} ${JSON.stringify(answer)}`);
  return answer.count;
}

/** A Firebase app whose Firestore talks to the stack's emulator, signed out; deleted after t. */
export function firestoreClient(t) {
  return newClient(t).db;
}

/**
 * A Firebase app whose Firestore and Auth talk to the stack's emulators, signed in as a new anonymous
 * user (Auth emulator); deleted after t. Resolves to its Firestore.
 */
export async function signedInFirestoreClient(t) {
  const { app, db } = newClient(t);
  const auth = getAuth(app);
  connectAuthEmulator(auth, `http://${stack.authHost}`, { disableWarnings: true });
  await signInAnonymously(auth);
  return db;
}

/** Resolves to the ID token of a new anonymous user of the stack's Auth emulator (deleted after t). */
export async function idToken(t) {
  const { app } = newClient(t);
  const auth = getAuth(app);
  connectAuthEmulator(auth, `http://${stack.authHost}`, { disableWarnings: true });
  const { user } = await signInAnonymously(auth);
  return user.getIdToken();
}

function newClient(t) {
  const app = initializeApp({ projectId: stack.project, apiKey: 'local-emulator' }, uniqueID('app'));
  const db = getFirestore(app);
  const [host, port] = stack.firestoreHost.split(':');
  connectFirestoreEmulator(db, host, Number(port));
  t.after(() => deleteApp(app));
  return { app, db };
}

/** Writes a document as the server does (the emulator's owner credential bypasses the rules). */
export async function adminSet(path, fields) {
  const url = `http://${stack.firestoreHost}/v1/projects/${stack.project}/databases/(default)/documents/${path}`;
  const resp = await fetch(url, {
    method: 'PATCH',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer owner' },
    body: JSON.stringify({ fields }),
  });
  if (!resp.ok) throw new Error(`admin set ${path}: HTTP ${resp.status} ${await resp.text()}`);
}

/**
 * Sends a structured query through Firestore's REST API (runQuery) as a client may, held to the rules:
 * signed out, or with a Firebase ID token. Resolves to the HTTP status and the decoded answer.
 */
export async function restQuery(structuredQuery, token) {
  const url = `http://${stack.firestoreHost}/v1/projects/${stack.project}/databases/(default)/documents:runQuery`;
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const resp = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ structuredQuery }) });
  return { status: resp.status, body: await resp.json() };
}

/** Loads the rules file at path into the emulator for the stack's project. */
export async function loadRules(path) {
  const content = await readFile(path, 'utf8');
  const resp = await fetch(`http://${stack.firestoreHost}/emulator/v1/projects/${stack.project}:securityRules`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ rules: { files: [{ name: 'firestore.rules', content }] } }),
  });
  if (!resp.ok) throw new Error(`load rules ${path}: HTTP ${resp.status} ${await resp.text()}`);
}

/**
 * Resolves with the first value of next() (a promise factory) that satisfies ok, within ms (roll-ups
 * come about a second after a write; a lost event waits for the sweep, every minute). A rejection of
 * next() is tried again, and the last one is named if none satisfies ok.
 */
export async function eventually(what, next, ok, ms = 150_000) {
  const deadline = Date.now() + ms;
  let last;
  let lastError;
  while (Date.now() < deadline) {
    try {
      last = await next();
      if (ok(last)) return last;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const failed = lastError ? `; last error ${lastError.code ?? ''} ${lastError.message}` : '';
  throw new Error(`${what}: not within ${ms} ms; last seen ${JSON.stringify(last)}${failed}`);
}

/** A document of the stack's database as the server has it (null if missing), read with the owner credential. */
export async function ownerGet(path) {
  const url = `http://${stack.firestoreHost}/v1/projects/${stack.project}/databases/(default)/documents/${path}`;
  const resp = await fetch(url, { headers: { Authorization: 'Bearer owner' } });
  if (resp.status === 404) return null;
  if (!resp.ok) throw new Error(`get ${path}: HTTP ${resp.status} ${await resp.text()}`);
  return (await resp.json()).fields;
}

/**
 * What the stack knows of counters, for a failed wait's message: each one's Count, roll-up and
 * counter document, the event bridge's stats, and the functions' last log lines naming them.
 */
export async function diagnosis(counters) {
  const parts = [];
  for (const id of counters) {
    const [count, rollup, counter] = await Promise.all([exactCount(id), ownerGet(`rollups/${encodeURIComponent(id)}`), ownerGet(`counters/${encodeURIComponent(id)}`)]
      .map((p) => p.catch((err) => `(${err.message})`)));
    parts.push(`${id}: Count ${JSON.stringify(count)}, roll-up ${JSON.stringify(rollup)}, counter ${JSON.stringify(counter)}`);
  }
  const stats = process.env.LOCALSTACK_EVENTS_STATS_URL;
  if (stats) parts.push(`event bridge: ${await fetch(stats).then((r) => r.text(), (err) => err.message)}`);
  const log = process.env.LOCALSTACK_FUNCTIONS_LOG;
  if (log) {
    const lines = (await readFile(log, 'utf8').catch(() => '')).split('\n').filter((l) => counters.some((id) => l.includes(id)));
    parts.push(`functions log naming them (last 20 of ${lines.length}):\n${lines.slice(-20).join('\n')}`);
  }
  return parts.join('\n');
}

/** eventually, failing with diagnosis(counters) added to its message. */
export async function eventuallyOf(counters, what, next, ok, ms) {
  try {
    return await eventually(what, next, ok, ms);
  } catch (err) {
    err.message += `\n${await diagnosis(counters)}`;
    throw err;
  }
}

