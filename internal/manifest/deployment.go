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
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/shared"
)

//go:generate go run ../gendeploy -root ../..

// Function is one deployed function (2nd gen): its name, the entry point it runs, its trigger and
// its limits. scripts/deploy.sh and terraform/ deploy exactly these (`go generate` writes them into
// scripts/deployment.gen.sh and terraform/deployment.gen.tf.json); the local stack wires the same
// triggers. The deploy documentation ("Production limits") says why each limit is what it is.
type Function struct {
	// Name is the deployed function's name, e.g. "increment".
	Name string
	// EntryPoint is the registered name the function runs.
	EntryPoint string
	// Trigger is how it is called in production.
	Trigger Trigger
	// Memory is the instance memory (e.g. "256Mi"); CPU the vCPUs, "" for the platform's default
	// for the memory (0.167 at 256Mi). Cloud Run serves concurrent requests only with 1 vCPU or more.
	Memory, CPU string
	// Concurrency is how many requests one instance serves at once.
	Concurrency int
	// Timeout bounds one request.
	Timeout time.Duration
	// MaxInstances bounds the instances (the minimum is 0: the platform's default).
	MaxInstances int
	// PublicOnRequest says that a deployment lets anyone (allUsers) invoke the function when asked
	// (deploy.sh --allow-unauthenticated-increments, Terraform var.public_increments); otherwise
	// callers need roles/run.invoker.
	PublicOnRequest bool
	// Admin says that the function manages counters (creates, reshapes, resets, deletes): deployments
	// let the admin invokers call it (deploy.sh --admin-invoker, Terraform var.admin_invokers), and
	// not the invokers of the other HTTP functions.
	Admin bool
	// OptIn says that deployments leave the function out unless asked for it by name
	// (deploy.sh --opt-in NAME, Terraform var.opt_in); the local stack always serves it.
	OptIn bool
	// PerSource says that the function is deployed once per document pattern of COUNTER_SOURCES,
	// its trigger's Document being that pattern (SourceFunctions).
	PerSource bool
}

// Trigger is how a function is triggered: HTTP when EventType is "", else a CloudEvent of
// EventType from Topic (Pub/Sub) or from writes of the documents that match Document (Firestore).
type Trigger struct {
	// EventType is the CloudEvent type, or "" for an HTTP function.
	EventType string
	// Topic is the Pub/Sub topic of a messagePublished trigger.
	Topic string
	// Document is the document path pattern of a Firestore trigger, below the counters collection
	// unless FromRoot (see DocumentPattern).
	Document string
	// FromRoot says that Document is the whole path pattern from the database's root.
	FromRoot bool
	// Retry says whether the platform redelivers an event whose function failed.
	Retry bool
	// DeadLetterTopic, when set, is where Pub/Sub parks a message the function failed on too often.
	DeadLetterTopic string
	// Schedule, when set, is the cron schedule (UTC) of the Cloud Scheduler job, named after Topic,
	// that publishes "tick" to Topic.
	Schedule string
}

// DocumentPattern is the Firestore trigger's full document path pattern in schema, or "".
func (t Trigger) DocumentPattern(schema shared.Schema) string {
	if t.Document == "" || t.FromRoot {
		return t.Document
	}
	return schema.Counters + "/" + t.Document
}

// Period is the longest time between two runs of a Schedule of the form "*/N * * * *" (every N
// minutes; "*" is every minute), the only form it reads: an error says what else was declared.
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

// SourceFunctions is the per-source function f deployed once per pattern of patterns: each named
// f.Name plus a hash of its pattern, so that a pattern keeps its function's name.
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

// Settings are the variables of functions/config that f uses (config.Setting.UsedBy).
func (f Function) Settings() []string {
	var names []string
	for _, s := range config.Settings() {
		if slices.Contains(s.UsedBy, "*") || slices.Contains(s.UsedBy, f.EntryPoint) {
			names = append(names, s.Name)
		}
	}
	return names
}

// Topics lists the Pub/Sub topics of every deployed function's trigger and dead letters, once each.
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

// FieldSetting is the TTL policy and single-field index settings of one field in one collection
// group, which deployments apply (gcloud firestore fields/indexes, google_firestore_field).
type FieldSetting struct {
	// Key names the setting in Terraform (google_firestore_field.field[Key]).
	Key string
	// Collection is the collection group: a collection setting of functions/config (e.g.
	// "DEDUPE_COLLECTION", its value at deploy time) or a fixed subcollection name.
	Collection string
	// Field is the field's name.
	Field string
	// TTL makes Firestore delete a document after the time in Field.
	TTL bool
	// Ascending keeps only the ascending collection index of the field; false exempts it from
	// every index.
	Ascending bool
}

// FieldSettings are the field settings the design relies on; docs/operations.md ("Field settings")
// lists each with the reason for it. A setting applies to every collection group of its ID in the
// database, an app's included: a TTL policy goes only on a group whose ID contains "counter"
// (shared.OursByName; a collection setting given one is checked to say so), index settings also on
// the guide's shards and on the roll-up collection.
func FieldSettings() []FieldSetting {
	return []FieldSetting{
		{Key: "dedupe_expires_at", Collection: "DEDUPE_COLLECTION", Field: shared.FieldExpiresAt, TTL: true},
		{Key: "rollup_updated_at", Collection: "ROLLUPS_COLLECTION", Field: shared.FieldUpdatedAt},
		{Key: "shard_count", Collection: shared.ShardsCollection, Field: shared.FieldCount, Ascending: true},
		{Key: "shard_writes", Collection: shared.ShardsCollection, Field: shared.FieldWrites, Ascending: true},
		{Key: "shard_buckets", Collection: shared.ShardsCollection, Field: shared.FieldBuckets, Ascending: true},
		{Key: "member_expires_at", Collection: shared.MembersCollection, Field: shared.FieldExpiresAt, TTL: true},
		{Key: "ledger_expires_at", Collection: shared.ChangeLedgerCollection, Field: shared.FieldExpiresAt, TTL: true},
		{Key: "ledger_keys", Collection: shared.ChangeLedgerCollection, Field: shared.FieldLedgerKeys},
	}
}

// CompositeIndex is a composite index that a query of the functions needs in production (the
// emulator needs none), which deployments create (gcloud firestore indexes composite,
// google_firestore_index) and firestore.indexes.json lists.
type CompositeIndex struct {
	// Key names the index in Terraform (google_firestore_index.composite[Key]).
	Key string
	// Collection is the collection, as in FieldSetting.
	Collection string
	// Fields are the indexed field paths, in order.
	Fields []IndexField
}

// IndexField is one field of a CompositeIndex: its path and order.
type IndexField struct {
	Path       string
	Descending bool
}

// CompositeIndexes are the indexes of the top lists' queries (rollup's refresh of a group's list):
// the roll-ups of a group by count, and, for each window, those of a group in one bucket by the
// bucket's count.
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

// EntryPoints lists every deployed entry point, in Deployed's order.
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
