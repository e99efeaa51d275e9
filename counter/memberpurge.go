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

// MaxMembersPerPurge bounds the documents one PurgeMembers call deletes per collection.
const MaxMembersPerPurge = 500

// clockSkew bounds how far an instance's clock may run ahead of Firestore's.
const clockSkew = time.Minute

// PurgeMembers deletes up to MaxMembersPerPurge member documents and per-caller totals per
// collection of counter id from epochs before the current one (all, when the counter is gone),
// oldest first; call it again while more is true.
func (s *Members) PurgeMembers(ctx context.Context, id string) (deleted int, more bool, err error) {
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

// epochStart is when snap's member epoch began: its last Reset, else its creation, else (no
// counter) the read time.
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

// purgeable is a collection PurgeMembers purges; byUpdate: a document's epoch is its last write's.
type purgeable struct {
	collection, field string
	byUpdate          bool
}

// purgePage deletes in one commit p's documents older than since among its oldest page; full says
// more may be left.
func (s *Members) purgePage(ctx context.Context, members *firestore.CollectionRef, p purgeable, since time.Time) (deleted int, full bool, err error) {
	page, err := members.Where(p.field, "<", since.Add(clockSkew)).
		OrderBy(p.field, firestore.Asc).Limit(MaxMembersPerPurge).Documents(ctx).GetAll()
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", members.ID, err)
	}
	deleted, err = s.deleteStale(ctx, page, p, since)
	return deleted, len(page) == MaxMembersPerPurge && deleted > 0, err
}

// deleteStale deletes page's documents older than since, keeping any rewritten since read.
func (s *Members) deleteStale(ctx context.Context, page []*firestore.DocumentSnapshot, p purgeable, since time.Time) (deleted int, err error) {
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
