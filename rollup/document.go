package rollup

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// Document is rollups/{id} as apps read it.
type Document struct {
	// Count is the counter's exact value at UpdatedAt.
	Count int64 `firestore:"count"`
	// UpdatedAt is the read time, on Firestore's clock, at which Count was summed: Count holds every
	// shard write committed at or before it and none after.
	UpdatedAt time.Time `firestore:"updated_at"`
	// Source is what wrote it: SourceTrigger or SourceScheduler.
	Source string `firestore:"source"`
	// Writer is an opaque name of the instance that wrote it (bookkeeping of the engine).
	Writer string `firestore:"writer,omitempty"`
	// Revision counts the document's writes, starting at 1.
	Revision int64 `firestore:"revision"`
	// ShardWrites is the sum of the counter's shard writes at UpdatedAt: the next roll-up measures
	// the counter's write rate across every instance from it.
	ShardWrites int64 `firestore:"shard_writes"`
	// WriteRate is the shard writes per second measured between the previous roll-up and this one.
	WriteRate float64 `firestore:"write_rate"`
	// CoolSince is when the counter's write rate fell below the shrink threshold; zero while it is
	// not cool (see ShardPolicy).
	CoolSince time.Time `firestore:"cool_since,omitempty"`
	// Windows holds, for a counter with windows, each window's bucket holding UpdatedAt and its count
	// at UpdatedAt ({"day": {"bucket": "2026-11-23", "count": 12}}); an app showing "today" compares the bucket
	// with its own.
	Windows map[string]WindowBucket `firestore:"windows,omitempty"`
	// Group is the counter's group as of UpdatedAt ("" for none): the roll-up is ranked in its top lists.
	Group string `firestore:"group,omitempty"`
	// LeftGroup is the group the counter last left (the roll-up that changed Group set it): the
	// sweep makes sure that group's lists no longer rank the counter.
	LeftGroup string `firestore:"left_group,omitempty"`
}

// windowNames are the windows d holds buckets of, in counter.Windows order.
func (d *Document) windowNames() []string {
	var ws []string
	for _, w := range counter.Windows {
		if _, ok := d.Windows[w]; ok {
			ws = append(ws, w)
		}
	}
	return ws
}

// WindowBucket is one window's bucket in a roll-up.
type WindowBucket struct {
	Bucket string `firestore:"bucket"`
	Count  int64  `firestore:"count"`
}

// Store reads and writes roll-up documents.
type Store struct {
	client *firestore.Client
	schema shared.Schema
}

// NewStore returns a Store over client with the collections named by schema.
func NewStore(client *firestore.Client, schema shared.Schema) *Store {
	return &Store{client: client, schema: schema}
}

// Get reads the roll-up of counter id; it returns nil and no error when there is none yet.
func (s *Store) Get(ctx context.Context, id string) (*Document, error) {
	snap, err := s.schema.RollupRef(s.client, id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read roll-up of counter %q: %w", id, err)
	}
	return decodeRollup(snap)
}
