// Votes in a poll, kept in a flat collection and counted by a field: a vote is votes/{poll}_{uid}
// (one per user and poll, which the app's rules enforce: web/example-app.rules) holding the poll and
// the choice, and web/counter-sources.json declares the counter poll-{field:poll}-{field:choice} over
// them, so each choice has a counter of its own. Changing one's vote is an update of the same
// document: the counters move it from the old choice to the new one.
import { doc, onSnapshot, setDoc } from 'firebase/firestore';

/** The vote document of uid in poll. */
export function voteDoc(db, poll, uid) {
  return doc(db, 'votes', `${poll}_${uid}`);
}

/** Votes choice in poll as uid (the signed-in user), or changes uid's vote to it. */
export function vote(db, poll, uid, choice) {
  return setDoc(voteDoc(db, poll, uid), { poll, choice });
}

/**
 * A value as a counter template with several placeholders writes it into an ID: ASCII letters and
 * digits as they are, every other UTF-8 byte as %XX (docs/collection-counters.md).
 */
export function encodeValue(value) {
  return Array.from(new TextEncoder().encode(value), (b) => (/[A-Za-z0-9]/.test(String.fromCharCode(b))
    ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}

/** The counter of choice in poll: poll-{field:poll}-{field:choice}. */
export function choiceCounter(poll, choice) {
  return `poll-${encodeValue(poll)}-${encodeValue(choice)}`;
}

/**
 * Calls onCount with choice's count in poll, live, from its counter's roll-up (0 before its first
 * roll-up). Returns the listener's unsubscribe.
 */
export function listenToChoiceCount(db, poll, choice, onCount, onError) {
  return onSnapshot(doc(db, 'rollups', choiceCounter(poll, choice)), (snap) => onCount(snap.data()?.count ?? 0), onError);
}

/** Calls onChoice with uid's choice in poll (null: none yet), live. Returns the unsubscribe. */
export function listenToMyVote(db, poll, uid, onChoice, onError) {
  return onSnapshot(voteDoc(db, poll, uid), (snap) => onChoice(snap.data()?.choice ?? null), onError);
}
