// An app's page on the app's own emulators (internal/quickstart's TestAppEmulatorSuiteLoop runs it):
// for each post of LIKES ({"post": n}), n new anonymous users like it through the Firebase JS SDK,
// held to the app's rules; then it listens to each roll-up of EXPECT ({"likes-post": count}) until
// every one shows its count, printing each count seen. Needs GOOGLE_CLOUD_PROJECT, FIRESTORE_EMULATOR_HOST
// and FIREBASE_AUTH_EMULATOR_HOST.
import { deleteApp, initializeApp } from 'firebase/app';
import { connectAuthEmulator, getAuth, signInAnonymously } from 'firebase/auth';
import {
  connectFirestoreEmulator, doc, getFirestore, onSnapshot, serverTimestamp, setDoc, setLogLevel,
} from 'firebase/firestore';

setLogLevel('silent');
const project = process.env.GOOGLE_CLOUD_PROJECT;
const [host, port] = process.env.FIRESTORE_EMULATOR_HOST.split(':');
const authURL = `http://${process.env.FIREBASE_AUTH_EMULATOR_HOST}`;
const likes = JSON.parse(process.env.LIKES);
const expect = JSON.parse(process.env.EXPECT);

// page is a new visitor's Firebase app, signed in anonymously.
async function page(name) {
  const app = initializeApp({ projectId: project, apiKey: 'local-emulator' }, name);
  const db = getFirestore(app);
  connectFirestoreEmulator(db, host, Number(port));
  const auth = getAuth(app);
  connectAuthEmulator(auth, authURL, { disableWarnings: true });
  const { user } = await signInAnonymously(auth);
  return { app, db, uid: user.uid };
}

for (const [post, n] of Object.entries(likes)) {
  for (let i = 0; i < n; i++) {
    const visitor = await page(`${post}-${i}`);
    await setDoc(doc(visitor.db, 'posts', post, 'likes', visitor.uid), { at: serverTimestamp() });
    await deleteApp(visitor.app);
  }
}

const reader = await page('reader');
await Promise.all(Object.entries(expect).map(([id, want]) => new Promise((resolve, reject) => {
  const stop = onSnapshot(doc(reader.db, 'rollups', id), (snap) => {
    console.log(`${id} ${snap.data()?.count}`);
    if (snap.data()?.count === want) {
      stop();
      resolve();
    }
  }, reject);
})));
await deleteApp(reader.app);
