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

// PurgeMembers deletes member documents and per-caller totals of counter id that no longer count:
// those of an epoch before the current one (its last Reset, or its creation; epochStart), or all of
// them when the counter does not exist. A member document is of its epoch when created (a commit
// that creates one also updates a fence of that epoch, which exists only once the epoch has begun);
// a per-caller total when last written (IncrementLimited reads the counter document in its
// transaction, and a delete is preconditioned on the update time it read). A call reads and deletes
// at most MaxMembersPerPurge documents in each collection (shared.MembersCollection,
// shared.LegacyMembersCollection, shared.CallersCollection), oldest first; more says that documents
// may be left: call it again until more is false. Reset and Delete leave the old documents to it.
func (s *Store) PurgeMembers(ctx context.Context, id string) (deleted int, more bool, err error) {
	counterRef := s.schema.CounterRef(s.client, id)
	snap, err := counterRef.Get(ctx)
	if err != nil && status.Code(err) != codes.NotFound {
		return 0, false, fmt.Errorf("purge members of %q: read counter: %w", id, err)
	}
	since := epochStart(snap)
	for _, p := range []purgeable{
		{shared.MembersCollection, shared.FieldCreatedAt, false},
		{shared.LegacyMembersCollection, shared.FieldCreatedAt, false},
		{shared.CallersCollection, shared.FieldUpdatedAt, true},
	} {
		n, full, err := s.purgePage(ctx, counterRef.Collection(p.collection), p, since)
		if err != nil {
			return deleted, true, fmt.Errorf("purge members of %q: %w", id, err)
		}
		deleted += n
		more = more || full
	}
	return deleted, more, nil
}

// epochStart is when the current member epoch of counter document snap began, on Firestore's clock:
// its last Reset's shared.FieldMembersSince, else its creation; its read time when it does not exist
// (every earlier document is of a gone counter).
func epochStart(snap *firestore.DocumentSnapshot) time.Time {
	if !snap.Exists() {
		return snap.ReadTime
	}
	since := snap.CreateTime
	if reset, ok := snap.Data()[shared.FieldMembersSince].(time.Time); ok && reset.After(since) {
		since = reset
	}
	return since
}

// purgeable is a collection PurgeMembers purges: the field its documents' epoch is queried by, and
// whether a document belongs to the epoch of its last write (per-caller totals, rewritten in place)
// rather than of its creation.
type purgeable struct {
	collection, field string
	byUpdate          bool
}

// purgePage deletes, in one commit, the documents of p that are of an epoch before since among the
// oldest MaxMembersPerPurge by p's field; full says the page was full and deleted some, so more may
// be left.
func (s *Store) purgePage(ctx context.Context, members *firestore.CollectionRef, p purgeable, since time.Time) (deleted int, full bool, err error) {
	page, err := members.Where(p.field, "<", since.Add(clockSkew)).
		OrderBy(p.field, firestore.Asc).Limit(MaxMembersPerPurge).Documents(ctx).GetAll()
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", members.ID, err)
	}
	deleted, err = s.deleteStale(ctx, page, p, since)
	return deleted, len(page) == MaxMembersPerPurge && deleted > 0, err
}

// deleteStale deletes, in one commit, the documents of page that are of an epoch before since; one
// of p.byUpdate rewritten since it was read (a per-caller total of the new epoch) is kept.
func (s *Store) deleteStale(ctx context.Context, page []*firestore.DocumentSnapshot, p purgeable, since time.Time) (deleted int, err error) {
	batch := s.client.BulkWriter(ctx)
	var jobs []*firestore.BulkWriterJob
	for _, doc := range page {
		written := doc.CreateTime
		var preconds []firestore.Precondition
		if p.byUpdate {
			written, preconds = doc.UpdateTime, []firestore.Precondition{firestore.LastUpdateTime(doc.UpdateTime)}
		}
		if !written.Before(since) {
			continue // of the current epoch
		}
		job, err := batch.Delete(doc.Ref, preconds...)
		if err != nil {
			batch.End()
			return 0, fmt.Errorf("delete %s: %w", doc.Ref.ID, err)
		}
		jobs = append(jobs, job)
	}
	batch.End()
	for _, job := range jobs {
		_, err := job.Results()
		switch {
		case status.Code(err) == codes.FailedPrecondition:
			continue // rewritten in the current epoch
		case err != nil:
			return deleted, fmt.Errorf("delete %s document: %w", p.collection, err)
		}
		deleted++
	}
	return deleted, nil
}
