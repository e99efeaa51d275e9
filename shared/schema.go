package shared

import (
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
)

// Field names of the counter documents. They match the Firebase "Distributed counters" guide's data
// model (lower-case "count"), so the guide's Web, Android, iOS and Python snippets interoperate.
const (
	// FieldNumShards is the shard count on counters/{id}.
	FieldNumShards = "num_shards"
	// FieldMinShards and FieldMaxShards, optional on counters/{id}, bound the shard count that the
	// roll-up adapts to the write rate; equal bounds pin the count (ConfigureCounter with num_shards
	// alone). Absent, the bounds are DEFAULT_NUM_SHARDS (or the current count, if lower) and
	// MaxNumShards.
	FieldMinShards = "min_shards"
	FieldMaxShards = "max_shards"
	// FieldCount is the partial count on counters/{id}/shards/{n} and the total on rollups/{id}.
	FieldCount = "count"
	// FieldUpdatedAt is when a roll-up was computed.
	FieldUpdatedAt = "updated_at"
	// FieldWrites is on every shard: how many writes have touched it. Every shard write increments it
	// by one in the same write (no extra document), so the sum over a counter's shards, taken in the same
	// aggregation query as the count, tells how fast the counter is written across every instance.
	FieldWrites = "writes"
	// FieldWindows, optional on counters/{id}, lists the windows ("hour", "day", "month") the counter
	// counts in besides all time (ConfigureCounter's windows).
	FieldWindows = "windows"
	// FieldBuckets is on the shards of a counter with windows: a map {window: {bucket label: count}}
	// (buckets.day.2026-11-23), incremented in the same write as the shard's count. A window's
	// bucket count is the sum of its field over every shard. On rollups/{id}, FieldWindows is a map
	// {window: {bucket, count}} of the buckets holding updated_at.
	FieldBuckets = "buckets"
	// FieldDistinct, optional on counters/{id}: true when the counter counts distinct members.
	FieldDistinct = "distinct"
	// MembersCollection is the subcollection of a distinct counter holding a document per member
	// counted (ID: a SHA-256 of the counter's member epoch and the member), and per member and window
	// bucket ({window}_{label}_{hash}, with expires_at for the TTL policy). A TTL policy applies to
	// every collection group of its name, so the name says "counter": no app uses it by accident.
	MembersCollection = "counter_members"
	// LegacyMembersCollection is where releases before MembersCollection kept the member documents.
	// Counters without FieldMemberCollection may have members there too, until cmd/movemembers
	// moves them (docs/operations.md, "Upgrading").
	LegacyMembersCollection = "members"
	// FieldMemberCollection is on counters/{id} created since MembersCollection: its value. A
	// counter without it reads its members in both collections and creates them in both.
	FieldMemberCollection = "member_collection"
	// FieldMembersEpoch, optional on counters/{id}: a random value that Reset replaces, so that the
	// members counted before no longer match. With the counter document's creation time it makes
	// the member epoch: a counter deleted and made again starts a new one too.
	FieldMembersEpoch = "members_epoch"
	// FieldMembersSince, on counters/{id} once reset: when the current member epoch began (the
	// Reset's commit time); member documents created before it no longer count.
	FieldMembersSince = "members_since"
	// MemberFencesCollection is the subcollection of a distinct counter holding one fence per shard
	// of the current member epoch ({epoch key}_{shard}, with FieldMembersEpoch). Every commit that
	// counts a member updates its shard's fence, which must exist; Reset and Delete delete the
	// fences, so a commit planned in an earlier epoch, or for a deleted counter, fails.
	MemberFencesCollection = "member_fences"
	// FieldGroup, optional on counters/{id} and rollups/{id}: the group whose top lists the counter
	// is in (ConfigureCounter's group).
	FieldGroup = "group"
	// FieldTop is a top list's entries, highest first: [{counter, count}]; FieldTopCounter is an
	// entry's counter ID.
	FieldTop        = "top"
	FieldTopCounter = "counter"
	// FieldWindow is a top list's window: "all", "hour", "day" or "month".
	FieldWindow = "window"
	// FieldBucket is the label of a roll-up window's bucket ({"bucket": "2026-11-23", "count": n}).
	FieldBucket = "bucket"
	// FieldSource, on the counter document of a collection counter, names its declaration;
	// FieldBaseAt is the read time its value was made exact at, and FieldBaseDone is true once the
	// correction to that value is applied (counter.Store.Rebase).
	FieldSource = "source_documents"
	// FieldMirrorDocument and FieldMirrorField, optional on a collection counter's document, name an
	// app document field that each roll-up write copies the count into (a declaration's mirror).
	FieldMirrorDocument = "mirror_document"
	FieldMirrorField    = "mirror_field"
	FieldBaseAt         = "base_at"
	FieldBaseDone       = "base_done"
	// ChangeLedgerCollection is the subcollection of a collection counter holding, per second, the
	// keys of the document changes it counted (FieldLedgerKeys: {key: delta}), which expire with
	// FieldExpiresAt.
	ChangeLedgerCollection = "counter_change_ledger"
	FieldLedgerKeys        = "keys"
	// ShardsCollection is the subcollection of a counter that holds its shards.
	ShardsCollection = "shards"
	// CallersCollection is the subcollection of a counter that holds, per verified caller (document
	// ID: a hash of the caller), what that caller added in total, for PER_CALLER_LIMIT.
	CallersCollection = "callers"
	// FieldNet is a caller document's total: the sum of that caller's counted deltas.
	FieldNet = "net"
	// FieldTouchedMinute is on counters/{id}: the Unix minute (seconds / 60) of a recent write, stamped
	// by a shard write in the same commit at most once a minute per instance. The scheduled roll-up
	// finds changed counters with one query on it; a value that changes once a minute, not a
	// timestamp, keeps the index free of a hot, ever-increasing range.
	FieldTouchedMinute = "touched_minute"
	// FieldHoursKeptFrom is on counters/{id} once its hourly buckets were pruned: the start of the
	// oldest hour whose bucket its shards may still hold (counter.Store.PruneHourBuckets).
	FieldHoursKeptFrom = "hours_kept_from"
	// FieldExpiresAt is on every dedupe record: Firestore's TTL policy deletes the record after it.
	FieldExpiresAt = "expires_at"
	// FieldDedupeSource, FieldDedupeKey, FieldDedupeFingerprint, FieldDedupeApplied and
	// FieldCreatedAt are the other fields of a dedupe record: where the key came from ("pubsub" or
	// "http"), the key itself, a hash of the increments it was first used with, the increments as
	// applied (counter, delta, shard), and when.
	FieldDedupeSource      = "source"
	FieldDedupeKey         = "key"
	FieldDedupeFingerprint = "fingerprint"
	FieldDedupeApplied     = "applied"
	FieldCreatedAt         = "created_at"
	// FieldDedupeWrite is on every dedupe record: the ID of the write record of the commit that
	// applied the key. FieldDedupeCaller is on records of caller-scoped keys: the verified caller.
	FieldDedupeWrite  = "write"
	FieldDedupeCaller = "caller"
	// FieldDedupeWindows is on the dedupe record of a keyed member increment: the windows in whose
	// bucket it counted the member (its applied delta is 1 when it counted the member all time).
	FieldDedupeWindows = "windows"
	// FieldWriteFence is on every write record (a document of the dedupe collection whose ID starts
	// with "write-" and whose source is "write"): true when it is a fence, created alone to make
	// sure the commit that would have created it never applies; false when that commit applied.
	FieldWriteFence = "fence"
	// FieldMemberWrite is on every member document of a distinct counter: a random ID of the commit
	// that created it, which tells an attempt whose answer was lost that it applied.
	FieldMemberWrite = "write"
	// FieldAppliedCounter, FieldAppliedDelta and FieldAppliedShard are the fields of each entry of
	// FieldDedupeApplied.
	FieldAppliedCounter = "counter"
	FieldAppliedDelta   = "delta"
	FieldAppliedShard   = "shard"
)

// Pub/Sub topics of the system.
const (
	// TopicIncrements carries increments for IncrementFromPubSub.
	TopicIncrements = "counter-increments"
	// TopicRollupTick carries Cloud Scheduler's ticks for RollupScheduled.
	TopicRollupTick = "counter-rollup-tick"
	// TopicIncrementsDeadLetter parks the messages of TopicIncrements that IncrementFromPubSub failed on
	// too often (a deployment setting: the code never reads it).
	TopicIncrementsDeadLetter = "counter-increments-dead-letter"
)

// OursByName says whether collection ID id names a collection group of the counters: it contains
// "counter". Only such groups get a TTL policy, which applies to every collection of that ID in the
// database, an app's included.
func OursByName(id string) bool { return strings.Contains(id, "counter") }

// UnixMinute is the value of FieldTouchedMinute for a write at t.
func UnixMinute(t time.Time) int64 { return t.Unix() / 60 }

// Schema names the top-level collections. Its zero value is not useful; the functions take theirs from
// their configuration (functions/config, Config.Schema).
type Schema struct {
	// Counters is the collection of counter documents (default "counters").
	Counters string
	// Rollups is the collection of roll-up documents apps read (default "rollups").
	Rollups string
	// Dedupe is the collection of dedupe records of keyed increments (default "counter_dedupe").
	Dedupe string
	// Tops is the collection of top lists, one per group and window (default "tops").
	Tops string
}

// TopWindowAll names the all-time list of a group in TopRef.
const TopWindowAll = "all"

// TopRef is {tops}/{group}_{window}, the top list of a group in a window (TopWindowAll: all time).
func (s Schema) TopRef(c *firestore.Client, group, window string) *firestore.DocumentRef {
	return c.Collection(s.Tops).Doc(group + "_" + window)
}

// CounterRef is counters/{id}.
func (s Schema) CounterRef(c *firestore.Client, id string) *firestore.DocumentRef {
	return c.Collection(s.Counters).Doc(id)
}

// ShardsRef is counters/{id}/shards. The counter's value is the sum over every document in it.
func (s Schema) ShardsRef(c *firestore.Client, id string) *firestore.CollectionRef {
	return s.CounterRef(c, id).Collection(ShardsCollection)
}

// ShardRef is counters/{id}/shards/{n}; shard IDs are decimal strings as in the guide.
func (s Schema) ShardRef(c *firestore.Client, id string, n int) *firestore.DocumentRef {
	return s.ShardsRef(c, id).Doc(strconv.Itoa(n))
}

// CallerRef is {counters}/{id}/callers/{callerDocID}.
func (s Schema) CallerRef(c *firestore.Client, id, callerDocID string) *firestore.DocumentRef {
	return s.CounterRef(c, id).Collection(CallersCollection).Doc(callerDocID)
}

// RollupRef is rollups/{id}.
func (s Schema) RollupRef(c *firestore.Client, id string) *firestore.DocumentRef {
	return c.Collection(s.Rollups).Doc(id)
}

// SweepStateRef is the scheduled sweep's progress document, {Sweep()}/state: where an unfinished
// sweep stopped and from which minute the next one looks for changes.
func (s Schema) SweepStateRef(c *firestore.Client) *firestore.DocumentRef {
	return c.Collection(s.Sweep()).Doc("state")
}

// Sweep is the collection of the scheduled sweep's state, {counters}_sweep: named after the counters
// collection, so no setting is needed for it.
func (s Schema) Sweep() string { return s.Counters + "_sweep" }

// DedupeRef is {dedupe}/{recordID}, the dedupe record of one keyed increment.
func (s Schema) DedupeRef(c *firestore.Client, recordID string) *firestore.DocumentRef {
	return c.Collection(s.Dedupe).Doc(recordID)
}

// ShardPathPattern is the document path pattern of shard writes, as a Firestore trigger names it:
// counters/{counter}/shards/{shard}.
func (s Schema) ShardPathPattern() string {
	return s.Counters + "/{counter}/" + ShardsCollection + "/{shard}"
}

// ParseShardPath extracts the counter ID from a shard document path relative to the database,
// "counters/{id}/shards/{n}", optionally prefixed with "documents/" as in a CloudEvent subject.
// ok is false when the path is not a shard of this schema.
func (s Schema) ParseShardPath(path string) (counterID string, ok bool) {
	path = strings.TrimPrefix(path, "documents/")
	parts := strings.Split(path, "/")
	if len(parts) != 4 || parts[0] != s.Counters || parts[2] != ShardsCollection || parts[1] == "" || parts[3] == "" {
		return "", false
	}
	return parts[1], true
}
