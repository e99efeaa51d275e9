package counter

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// MaxMembersPerPurge bounds the member documents one PurgeMembers call reads and deletes in each
// member collection (one commit each).
const MaxMembersPerPurge = 500

// clockSkew bounds how far an instance's clock (a member document's created_at) may run ahead of
// Firestore's (its creation time): PurgeMembers queries that much past the epoch's start.
const clockSkew = time.Minute

// PurgeMembers deletes member documents of counter id that no longer count: those created before its
// current member epoch began (its last Reset, or its creation), or all of them when the counter does
// not exist. Member documents of the current epoch are never deleted: a commit that creates one
// also updates a fence of that epoch, which exists only once the epoch has begun. A call reads and
// deletes at most MaxMembersPerPurge documents in each member collection (shared.MembersCollection
// and shared.LegacyMembersCollection), oldest first; more says that documents may be left: call it
// again until more is false. Reset and Delete leave the old documents to it.
func (s *Store) PurgeMembers(ctx context.Context, id string) (deleted int, more bool, err error) {
	counterRef := s.schema.CounterRef(s.client, id)
	snap, err := counterRef.Get(ctx)
	var since time.Time // the current epoch's start, on Firestore's clock
	switch {
	case status.Code(err) == codes.NotFound:
		since = snap.ReadTime
	case err != nil:
		return 0, false, fmt.Errorf("purge members of %q: read counter: %w", id, err)
	default:
		since = snap.CreateTime
		if reset, ok := snap.Data()[shared.FieldMembersSince].(time.Time); ok && reset.After(since) {
			since = reset
		}
	}
	for _, collection := range []string{shared.MembersCollection, shared.LegacyMembersCollection} {
		n, full, err := s.purgePage(ctx, counterRef.Collection(collection), since)
		if err != nil {
			return deleted, true, fmt.Errorf("purge members of %q: %w", id, err)
		}
		deleted += n
		more = more || full
	}
	return deleted, more, nil
}

// purgePage deletes, in one commit, the documents of members that were created before since among
// the oldest MaxMembersPerPurge by created_at; full says the page was full and deleted some, so
// more may be left.
func (s *Store) purgePage(ctx context.Context, members *firestore.CollectionRef, since time.Time) (deleted int, full bool, err error) {
	page, err := members.Where(shared.FieldCreatedAt, "<", since.Add(clockSkew)).
		OrderBy(shared.FieldCreatedAt, firestore.Asc).Limit(MaxMembersPerPurge).Documents(ctx).GetAll()
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", members.ID, err)
	}
	batch := s.client.BulkWriter(ctx)
	var jobs []*firestore.BulkWriterJob
	for _, doc := range page {
		if !doc.CreateTime.Before(since) {
			continue // of the current epoch
		}
		job, err := batch.Delete(doc.Ref)
		if err != nil {
			batch.End()
			return 0, false, fmt.Errorf("delete %s: %w", doc.Ref.ID, err)
		}
		jobs = append(jobs, job)
	}
	batch.End()
	for _, job := range jobs {
		if _, err := job.Results(); err != nil {
			return deleted, true, fmt.Errorf("delete member document: %w", err)
		}
		deleted++
	}
	return deleted, len(page) == MaxMembersPerPurge && deleted > 0, nil
}
