package shared

import (
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
)

// Field and subcollection names of the counter documents (the Firebase guide's data model);
// docs/design.md ("Data model") describes each.
const (
	FieldNumShards    = "num_shards"
	FieldMinShards    = "min_shards"
	FieldMaxShards    = "max_shards"
	FieldCount        = "count"
	FieldUpdatedAt    = "updated_at"
	FieldWrites       = "writes"
	FieldWindows      = "windows"
	FieldBuckets      = "buckets"
	FieldDistinct     = "distinct"
	MembersCollection = "counter_members"
	// LegacyMembersCollection held members before MembersCollection.
	LegacyMembersCollection = "members"
	FieldMemberCollection   = "member_collection"
	FieldMembersEpoch       = "members_epoch"
	FieldMembersSince       = "members_since"
	MemberFencesCollection  = "member_fences"
	FieldGroup              = "group"
	FieldTop                = "top"
	FieldTopCounter         = "counter"
	FieldWindow             = "window"
	FieldBucket             = "bucket"
	FieldSource             = "source_documents"
	// FieldSourceDefinition fingerprints the declaration a collection counter's base was taken under.
	FieldSourceDefinition = "source_definition"
	FieldMirrorDocument   = "mirror_document"
	FieldMirrorField      = "mirror_field"
	// FieldBaseAt names a pending base (package sources' stamp); with FieldBaseDone, it is the
	// read time the counter was made exact at.
	FieldBaseAt   = "base_at"
	FieldBaseDone = "base_done"
	// ChangeLedgerCollection holds a record (FieldChangeDelta) per counted change, named by its key.
	ChangeLedgerCollection = "counter_change_ledger"
	FieldChangeDelta       = "delta"
	// FieldSumWide marks a sum counter some shard of which may hold more than its fast-path bound
	// (package sources); a shrink's fold sets it.
	FieldSumWide = "sum_wide"
	// FieldSumRefused marks a sum counter that may hold records in SumRefusedCollection: per
	// document (FieldRefusedPath), what it adds that the counter does not count (FieldRefusedUnapplied,
	// a decimal integer), because counting it would have left int64.
	FieldSumRefused        = "sum_refused"
	SumRefusedCollection   = "counter_sum_refused"
	FieldRefusedPath       = "path"
	FieldRefusedUnapplied  = "unapplied"
	ShardsCollection       = "shards"
	CallersCollection      = "callers"
	FieldNet               = "net"
	FieldTouchedMinute     = "touched_minute"
	FieldHoursKeptFrom     = "hours_kept_from"
	FieldExpiresAt         = "expires_at"
	FieldDedupeSource      = "source"
	FieldDedupeKey         = "key"
	FieldDedupeFingerprint = "fingerprint"
	FieldDedupeApplied     = "applied"
	FieldCreatedAt         = "created_at"
	FieldDedupeWrite       = "write"
	FieldDedupeCaller      = "caller"
	FieldDedupeWindows     = "windows"
	FieldWriteFence        = "fence"
	FieldMemberWrite       = "write"
	// Fields of each entry of FieldDedupeApplied.
	FieldAppliedCounter = "counter"
	FieldAppliedDelta   = "delta"
	FieldAppliedShard   = "shard"
)

// Pub/Sub topics of the system.
const (
	TopicIncrements           = "counter-increments"
	TopicRollupTick           = "counter-rollup-tick"
	TopicIncrementsDeadLetter = "counter-increments-dead-letter"
)

// OursByName reports whether collection ID id contains "counter": only those get a TTL policy.
func OursByName(id string) bool { return strings.Contains(id, "counter") }

// UnixMinute is the value of FieldTouchedMinute for a write at t.
func UnixMinute(t time.Time) int64 { return t.Unix() / 60 }

// Schema names the top-level collections; every name is required.
type Schema struct {
	Counters string
	Rollups  string
	Dedupe   string
	Tops     string
}

// TopWindowAll names the all-time list of a group in TopRef.
const TopWindowAll = "all"

// TopRef is {tops}/{group}_{window}.
func (s Schema) TopRef(c *firestore.Client, group, window string) *firestore.DocumentRef {
	return c.Collection(s.Tops).Doc(group + "_" + window)
}

// CounterRef is counters/{id}.
func (s Schema) CounterRef(c *firestore.Client, id string) *firestore.DocumentRef {
	return c.Collection(s.Counters).Doc(id)
}

// ShardsRef is counters/{id}/shards: the value is the sum over all its documents.
func (s Schema) ShardsRef(c *firestore.Client, id string) *firestore.CollectionRef {
	return s.CounterRef(c, id).Collection(ShardsCollection)
}

// ShardRef is counters/{id}/shards/{n}, n in decimal.
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

// SweepStateRef is the sweep's progress document, {Sweep()}/state.
func (s Schema) SweepStateRef(c *firestore.Client) *firestore.DocumentRef {
	return c.Collection(s.Sweep()).Doc("state")
}

// Sweep is the sweep's collection, {counters}_sweep.
func (s Schema) Sweep() string { return s.Counters + "_sweep" }

// DedupeRef is {dedupe}/{recordID}.
func (s Schema) DedupeRef(c *firestore.Client, recordID string) *firestore.DocumentRef {
	return c.Collection(s.Dedupe).Doc(recordID)
}

// ShardPathPattern is the Firestore trigger pattern of shard writes.
func (s Schema) ShardPathPattern() string {
	return s.Counters + "/{counter}/" + ShardsCollection + "/{shard}"
}

// ParseShardPath returns the counter ID of "[documents/]counters/{id}/shards/{n}"; else ok is false.
func (s Schema) ParseShardPath(path string) (counterID string, ok bool) {
	path = strings.TrimPrefix(path, "documents/")
	parts := strings.Split(path, "/")
	if len(parts) != 4 || parts[0] != s.Counters || parts[2] != ShardsCollection || parts[1] == "" || parts[3] == "" {
		return "", false
	}
	return parts[1], true
}
