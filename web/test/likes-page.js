// The script of likes.test.mjs's pages, bundled by it with esbuild and added to a document of the
// example app's server (a real origin, so IndexedDB works): one signed-in user of the stack's emulators, with the example
// app's likes module (src/likes.js) and a Firestore with a persistent cache, driven through
// window.likesPage.
import { initializeApp } from 'firebase/app';
import { connectAuthEmulator, getAuth, signInAnonymously } from 'firebase/auth';
import {
  connectFirestoreEmulator, doc, getDocFromCache, initializeFirestore, persistentLocalCache, serverTimestamp, setDoc,
  setLogLevel, waitForPendingWrites,
} from 'firebase/firestore';
import { like, likeDoc, listenToLikeCount, unlike } from '../src/likes.js';

setLogLevel('silent'); // refusals are what some steps expect
let db;
let uid;
const outcomes = new Map(); // write name → 'pending' | 'ok' | an error code
const seen = new Map(); // post → every count its roll-up listener delivered

/** 'ok' when op resolves, else the error's code. */
const outcome = (op) => op.then(() => 'ok', (err) => err.code || String(err));

window.likesPage = {
  /**
   * Opens Firestore with IndexedDB persistence for the signed-in user: the one an earlier page of
   * this browser context signed in (Auth keeps it in IndexedDB too), else a new anonymous user.
   * Resolves to the uid.
   */
  async start(cfg) {
    const app = initializeApp({ projectId: cfg.projectId, apiKey: 'local-emulator' });
    const auth = getAuth(app);
    connectAuthEmulator(auth, cfg.authEmulatorUrl, { disableWarnings: true });
    await auth.authStateReady();
    ({ uid } = auth.currentUser ?? (await signInAnonymously(auth)).user);
    db = initializeFirestore(app, { localCache: persistentLocalCache() });
    connectFirestoreEmulator(db, cfg.firestoreHost, cfg.firestorePort);
    return uid;
  },
  /** Likes post and resolves to the outcome once the server answered. */
  like: (post) => outcome(like(db, post, uid)),
  /** Takes the like back; resolves to the outcome. */
  unlike: (post) => outcome(unlike(db, post, uid)),
  /** Starts a like without waiting for the server (offline, it waits for the network); see outcomeOf. */
  startLike(post, name) {
    outcomes.set(name, 'pending');
    outcome(like(db, post, uid)).then((o) => outcomes.set(name, o));
  },
  outcomeOf: (name) => outcomes.get(name),
  /** Writes a like document other than the app's: as another uid, or with fields of its own. */
  forge: (post, asUid, fields) => outcome(setDoc(doc(db, 'posts', post, 'likes', asUid), { at: serverTimestamp(), ...fields })),
  /** Listens to post's count; counts(post) is every count delivered so far. */
  watch(post) {
    seen.set(post, []);
    listenToLikeCount(db, post, ({ count }) => seen.get(post).push(count));
  },
  counts: (post) => seen.get(post),
  /** This device's view of its like of post (from the cache, without the network). */
  async cachedLike(post) {
    try {
      const snap = await getDocFromCache(likeDoc(db, post, uid));
      return { exists: snap.exists(), pending: snap.metadata.hasPendingWrites };
    } catch (err) {
      return { error: err.code };
    }
  },
  /** Resolves once every write made so far is on the server. */
  flushed: () => outcome(waitForPendingWrites(db)),
  online: () => navigator.onLine,
};
