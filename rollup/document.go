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

// Document is rollups/{id} as apps read it (docs/api.md, "The roll-up document").
type Document struct {
	// Count is the exact value at UpdatedAt, a read time on Firestore's clock: every shard write
	// committed at or before it, none after.
	Count       int64     `firestore:"count"`
	UpdatedAt   time.Time `firestore:"updated_at"`
	Source      string    `firestore:"source"`
	Writer      string    `firestore:"writer,omitempty"`
	Revision    int64     `firestore:"revision"`
	ShardWrites int64     `firestore:"shard_writes"`
	WriteRate   float64   `firestore:"write_rate"`
	CoolSince   time.Time `firestore:"cool_since,omitempty"`
	// Windows holds each window's bucket holding UpdatedAt, and its count then.
	Windows   map[string]WindowBucket `firestore:"windows,omitempty"`
	Group     string                  `firestore:"group,omitempty"`
	LeftGroup string                  `firestore:"left_group,omitempty"`
}

// windowNames are the windows d holds, in counter.Windows order.
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

// Get reads the roll-up of counter id; nil, nil when there is none.
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
