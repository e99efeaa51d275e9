package counter

import (
	"context"
	"errors"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// LegacyMembersPass is what one MoveLegacyMembers pass did.
type LegacyMembersPass struct {
	Moved  int // member documents moved out of shared.LegacyMembersCollection
	Marked int // counter documents given shared.FieldMemberCollection
}

// MoveLegacyMembers makes one pass over every counter, leftovers of deleted ones included: it moves
// each legacy member document to shared.MembersCollection atomically, then marks the counter. Run a
// second pass after Options.ShardCountCacheTTL; safe to repeat. See CHANGELOG.md, 0.9.0, "Distinct
// members move from `members` to `counter_members`".
func (s *Members) MoveLegacyMembers(ctx context.Context) (LegacyMembersPass, error) {
	var pass LegacyMembersPass
	counters := s.client.Collection(s.schema.Counters).DocumentRefs(ctx)
	for {
		ref, err := counters.Next()
		if errors.Is(err, iterator.Done) {
			return pass, nil
		}
		if err != nil {
			return pass, fmt.Errorf("move legacy members: list counters: %w", err)
		}
		moved, err := s.moveLegacyMembersOf(ctx, ref)
		pass.Moved += moved
		if err != nil {
			return pass, err
		}
		_, err = ref.Update(ctx, []firestore.Update{{Path: shared.FieldMemberCollection, Value: shared.MembersCollection}})
		switch {
		case err == nil:
			pass.Marked++
		case status.Code(err) != codes.NotFound: // a deleted counter's leftovers
			return pass, fmt.Errorf("move legacy members: mark counter %q: %w", ref.ID, err)
		}
	}
}

// moveLegacyMembersOf moves counter ref's legacy member documents and returns how many it moved.
func (s *Members) moveLegacyMembersOf(ctx context.Context, ref *firestore.DocumentRef) (int, error) {
	moved := 0
	var batch []op
	commit := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := s.commitOps(ctx, batch); err != nil {
			return fmt.Errorf("move legacy members of %q: %w", ref.ID, err)
		}
		moved += len(batch) / 2
		batch = batch[:0]
		return nil
	}
	docs := ref.Collection(shared.LegacyMembersCollection).Documents(ctx)
	defer docs.Stop()
	for {
		doc, err := docs.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return moved, fmt.Errorf("move legacy members of %q: list: %w", ref.ID, err)
		}
		batch = append(batch,
			op{kind: opSet, ref: ref.Collection(shared.MembersCollection).Doc(doc.Ref.ID), data: doc.Data()},
			op{kind: opDelete, ref: doc.Ref})
		if len(batch) >= maxWritesPerBatch {
			if err := commit(); err != nil {
				return moved, err
			}
		}
	}
	return moved, commit()
}
