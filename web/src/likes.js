// Likes kept as the app's own documents, counted by a collection counter: a like is
// posts/{post}/likes/{uid} (its ID is the user's uid, so one per user, which the app's rules enforce:
// web/example-app.rules), and web/counter-sources.json declares the counter likes-{post} over them. The
// app writes and deletes the document with the Firebase JS SDK, offline too, and listens to the count
// on rollups/likes-{post}, one document. docs/collection-counters.md shows the same in Swift and Kotlin.
import { deleteDoc, doc, onSnapshot, serverTimestamp, setDoc } from 'firebase/firestore';

/** The like document of uid on post. */
export function likeDoc(db, post, uid) {
  return doc(db, 'posts', post, 'likes', uid);
}

/** The roll-up that counts post's likes (counter likes-{post}). */
export function likesRollupDoc(db, post) {
  return doc(db, 'rollups', `likes-${post}`);
}

/**
 * Likes post as uid (the signed-in user): creates the like document with the server's time and
 * nothing else, as the rules demand. It resolves once the server has it; offline, once the page is
 * back online (the SDK keeps the write, in IndexedDB with a persistent cache). It rejects with
 * permission-denied when the rules refuse, e.g. when uid already likes post.
 */
export function like(db, post, uid) {
  return setDoc(likeDoc(db, post, uid), { at: serverTimestamp() });
}

/** Takes uid's like of post back: deletes the like document (nothing happens if there is none). */
export function unlike(db, post, uid) {
  return deleteDoc(likeDoc(db, post, uid));
}

/**
 * Calls onCount with post's like count, live: {count, updatedAt} from its roll-up (count 0 and
 * updatedAt null before the counter's first roll-up). Returns the listener's unsubscribe.
 */
export function listenToLikeCount(db, post, onCount, onError) {
  return onSnapshot(likesRollupDoc(db, post), (snap) => {
    const data = snap.data();
    onCount({ count: data?.count ?? 0, updatedAt: data?.updated_at?.toDate() ?? null });
  }, onError);
}

/**
 * Calls onLiked with whether uid likes post, live, and whether that is still only this device's
 * (a like or unlike not yet on the server: offline, or in flight). Returns the unsubscribe.
 */
export function listenToMyLike(db, post, uid, onLiked, onError) {
  return onSnapshot(likeDoc(db, post, uid), { includeMetadataChanges: true }, (snap) => {
    onLiked({ liked: snap.exists(), pending: snap.metadata.hasPendingWrites });
  }, onError);
}
