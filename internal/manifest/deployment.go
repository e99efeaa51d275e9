package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/shared"
)

//go:generate go run ../gendeploy -root ../..

// Function is one deployed function with its trigger and limits (docs/operations.md,
// "Production limits").
type Function struct {
	Name       string
	EntryPoint string
	Trigger    Trigger
	// CPU "" is the platform's default for Memory.
	Memory, CPU     string
	Concurrency     int
	Timeout         time.Duration
	MaxInstances    int
	PublicOnRequest bool // may be opened to allUsers
	Admin           bool // only admin invokers may call it
	OptIn           bool // deployed only when named
	PerSource       bool // deployed per COUNTER_SOURCES pattern
}

// Trigger is HTTP when EventType is "", else a Pub/Sub or Firestore CloudEvent.
type Trigger struct {
	EventType string
	Topic     string
	// Document is below the counters collection unless FromRoot.
	Document        string
	FromRoot        bool
	Retry           bool
	DeadLetterTopic string
	Schedule        string // cron (ScheduleTimeZone) of a job publishing ScheduleMessage to Topic
}

// ScheduleTimeZone and ScheduleMessage are every Schedule's.
const ScheduleTimeZone, ScheduleMessage = "Etc/UTC", "tick"

// DocumentPattern is the Firestore trigger's full path pattern, or "".
func (t Trigger) DocumentPattern(schema shared.Schema) string {
	if t.Document == "" || t.FromRoot {
		return t.Document
	}
	return schema.Counters + "/" + t.Document
}

// Period is the longest time between runs of Schedule, which must be "*/N * * * *" or "* * * * *".
func (t Trigger) Period() (time.Duration, error) {
	fields := strings.Fields(t.Schedule)
	if len(fields) == 5 && strings.Join(fields[1:], " ") == "* * * *" {
		every, err := strconv.Atoi(strings.TrimPrefix(fields[0], "*/"))
		if fields[0] == "*" {
			every, err = 1, nil
		}
		if err == nil && every >= 1 && every <= 59 {
			return time.Duration(every) * time.Minute, nil
		}
	}
	return 0, fmt.Errorf("schedule %q of topic %s: want \"*/N * * * *\" (every N minutes, N from 1 to 59) or \"* * * * *\"", t.Schedule, t.Topic)
}

// Deployed lists every deployed function, in deployment order.
func Deployed() []Function {
	return []Function{
		{Name: "increment", EntryPoint: functions.EntryIncrement, PublicOnRequest: true,
			Memory: "256Mi", CPU: "1", Concurrency: 80, Timeout: time.Minute, MaxInstances: 100},
		{Name: "count", EntryPoint: functions.EntryCount,
			Memory: "256Mi", Concurrency: 1, Timeout: time.Minute, MaxInstances: 10},
		{Name: "top", EntryPoint: functions.EntryTop,
			Memory: "256Mi", Concurrency: 1, Timeout: time.Minute, MaxInstances: 10},
		{Name: "configure-counter", EntryPoint: functions.EntryConfigureCounter, Admin: true,
			Memory: "256Mi", Concurrency: 1, Timeout: time.Minute, MaxInstances: 5},
		{Name: "increment-from-pubsub", EntryPoint: functions.EntryIncrementFromPubSub,
			Trigger: Trigger{EventType: eventhttp.EventPubSubMessagePublished, Topic: shared.TopicIncrements, Retry: true,
				DeadLetterTopic: shared.TopicIncrementsDeadLetter},
			Memory: "256Mi", CPU: "1", Concurrency: 1000, Timeout: time.Minute, MaxInstances: 100},
		{Name: "rollup-on-shard-write", EntryPoint: functions.EntryRollupOnShardWrite,
			Trigger: Trigger{EventType: eventhttp.EventFirestoreDocWritten, Document: "{counter}/" + shared.ShardsCollection + "/{shard}", Retry: true},
			Memory:  "512Mi", CPU: "1", Concurrency: 80, Timeout: time.Minute, MaxInstances: 20},
		{Name: "rollup-scheduled", EntryPoint: functions.EntryRollupScheduled,
			Trigger: Trigger{EventType: eventhttp.EventPubSubMessagePublished, Topic: shared.TopicRollupTick, Schedule: "* * * * *"},
			Memory:  "256Mi", Concurrency: 1, Timeout: 5 * time.Minute, MaxInstances: 1},
		{Name: "fold-extension-shards", EntryPoint: functions.EntryFoldExtensionShards, OptIn: true,
			Trigger: Trigger{EventType: eventhttp.EventFirestoreDocWritten, Document: functions.ExtensionShardsPattern, FromRoot: true, Retry: true},
			Memory:  "256Mi", CPU: "1", Concurrency: 80, Timeout: time.Minute, MaxInstances: 20},
		{Name: "count-documents", EntryPoint: functions.EntryCountDocumentWrite, PerSource: true,
			Trigger: Trigger{EventType: eventhttp.EventFirestoreDocWritten, FromRoot: true, Retry: true},
			Memory:  "256Mi", CPU: "1", Concurrency: 80, Timeout: time.Minute, MaxInstances: 20},
	}
}

// SourceFunctions is f once per pattern, named after a hash of it.
func SourceFunctions(f Function, patterns []string) []Function {
	var out []Function
	for _, p := range patterns {
		g := f
		sum := sha256.Sum256([]byte(p))
		g.Name = f.Name + "-" + hex.EncodeToString(sum[:4])
		g.Trigger.Document = p
		out = append(out, g)
	}
	return out
}

// DeployedFunction is the deployed function that runs entryPoint.
func DeployedFunction(entryPoint string) (Function, bool) {
	i := slices.IndexFunc(Deployed(), func(f Function) bool { return f.EntryPoint == entryPoint })
	if i < 0 {
		return Function{}, false
	}
	return Deployed()[i], true
}

// Topics lists the Pub/Sub topics, once each.
func Topics() []string {
	var topics []string
	for _, f := range Deployed() {
		for _, t := range []string{f.Trigger.Topic, f.Trigger.DeadLetterTopic} {
			if t != "" && !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	return topics
}

// FieldSetting is the TTL policy and single-field indexes of a field in a collection group.
type FieldSetting struct {
	Key string
	// Collection is a config setting's name (e.g. "DEDUPE_COLLECTION") or a subcollection.
	Collection string
	Field      string
	TTL        bool
	Ascending  bool // else no index at all
}

// FieldSettings are the field settings the design relies on (docs/operations.md). A TTL
// policy goes only on a collection ID containing "counter".
func FieldSettings() []FieldSetting {
	return []FieldSetting{
		{Key: "dedupe_expires_at", Collection: "DEDUPE_COLLECTION", Field: shared.FieldExpiresAt, TTL: true},
		{Key: "rollup_updated_at", Collection: "ROLLUPS_COLLECTION", Field: shared.FieldUpdatedAt},
		{Key: "shard_count", Collection: shared.ShardsCollection, Field: shared.FieldCount, Ascending: true},
		{Key: "shard_writes", Collection: shared.ShardsCollection, Field: shared.FieldWrites, Ascending: true},
		{Key: "shard_buckets", Collection: shared.ShardsCollection, Field: shared.FieldBuckets, Ascending: true},
		{Key: "member_expires_at", Collection: shared.MembersCollection, Field: shared.FieldExpiresAt, TTL: true},
		{Key: "ledger_expires_at", Collection: shared.ChangeLedgerCollection, Field: shared.FieldExpiresAt, TTL: true},
		{Key: "ledger_delta", Collection: shared.ChangeLedgerCollection, Field: shared.FieldChangeDelta},
	}
}

// CompositeIndex is a composite index a query needs in production.
type CompositeIndex struct {
	Key        string
	Collection string // as in FieldSetting
	Fields     []IndexField
}

// IndexField is one field of a CompositeIndex.
type IndexField struct {
	Path       string
	Descending bool
}

// CompositeIndexes are the indexes of the top lists' queries.
func CompositeIndexes() []CompositeIndex {
	group := IndexField{Path: shared.FieldGroup}
	indexes := []CompositeIndex{{Key: "top_all", Collection: "ROLLUPS_COLLECTION",
		Fields: []IndexField{group, {Path: shared.FieldCount, Descending: true}}}}
	for _, w := range counter.Windows {
		window := shared.FieldWindows + "." + w + "."
		indexes = append(indexes, CompositeIndex{Key: "top_" + w, Collection: "ROLLUPS_COLLECTION", Fields: []IndexField{
			group, {Path: window + shared.FieldBucket}, {Path: window + shared.FieldCount, Descending: true}}})
	}
	return indexes
}

// EntryPoints lists every deployed entry point.
var EntryPoints = entryPoints(func(Function) bool { return true })

// HTTPEntryPoints lists the HTTP-triggered entry points.
var HTTPEntryPoints = entryPoints(func(f Function) bool { return f.Trigger.EventType == "" })

// CloudEventEntryPoints lists the CloudEvent-triggered entry points.
var CloudEventEntryPoints = entryPoints(func(f Function) bool { return f.Trigger.EventType != "" })

func entryPoints(keep func(Function) bool) []string {
	var names []string
	for _, f := range Deployed() {
		if keep(f) {
			names = append(names, f.EntryPoint)
		}
	}
	return names
}
