package functions

import (
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/shared"
)

// Entry-point names: the names the functions are registered under, and so each deployment's
// --entry-point. Deployment scripts and Terraform are checked against them.
const (
	EntryIncrement           = "Increment"
	EntryCount               = "Count"
	EntryConfigureCounter    = "ConfigureCounter"
	EntryIncrementFromPubSub = "IncrementFromPubSub"
	EntryRollupOnShardWrite  = "RollupOnShardWrite"
	EntryRollupScheduled     = "RollupScheduled"
)

// CloudEvent types of the event-triggered entry points.
const (
	EventPubSubMessagePublished = eventhttp.EventPubSubMessagePublished
	EventFirestoreDocWritten    = "google.cloud.firestore.document.v1.written"
)

// Trigger is how an entry point is triggered in production: what deployment scripts, Terraform and
// the local stack must wire, and what the consistency tests compare them with.
type Trigger struct {
	// EntryPoint is the registered name.
	EntryPoint string
	// EventType is the CloudEvent type, or "" for an HTTP function.
	EventType string
	// Topic is the Pub/Sub topic of a messagePublished trigger.
	Topic string
	// DocumentPattern is the document path pattern of a Firestore trigger.
	DocumentPattern string
	// Retry says whether the platform should redeliver an event whose function failed.
	Retry bool
	// DeadLetterTopic, when set, is where Pub/Sub parks a message the function failed on too often.
	DeadLetterTopic string
}

// Triggers lists every entry point with its production trigger, for the collections in schema.
func Triggers(schema shared.Schema) []Trigger {
	return []Trigger{
		{EntryPoint: EntryIncrement},
		{EntryPoint: EntryCount},
		{EntryPoint: EntryConfigureCounter},
		{EntryPoint: EntryIncrementFromPubSub, EventType: EventPubSubMessagePublished, Topic: shared.TopicIncrements, Retry: true,
			DeadLetterTopic: shared.TopicIncrementsDeadLetter},
		{EntryPoint: EntryRollupOnShardWrite, EventType: EventFirestoreDocWritten, DocumentPattern: schema.ShardPathPattern(), Retry: true},
		{EntryPoint: EntryRollupScheduled, EventType: EventPubSubMessagePublished, Topic: shared.TopicRollupTick},
	}
}
