// Package counter implements distributed counters on Firestore, as in the Firebase "Distributed
// counters" guide: an increment lands on one random shard with a server-side increment (no
// read-modify-write), the shard count can change at any time without changing the value, and the
// exact value is one aggregation query over every shard document.
//
// It never imports net/http or CloudEvents: the functions package adapts it to triggers.
package counter
