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
	// Moved counts the member documents moved out of shared.LegacyMembersCollection.
	Moved int
	// Marked counts the counter documents given shared.FieldMemberCollection.
	Marked int
}

// MoveLegacyMembers makes one pass over every counter of the schema (counter documents and, for
// deleted counters, their leftover subcollections): it moves each member document from
// shared.LegacyMembersCollection to shared.MembersCollection (a copy and the original's deletion in
// one commit, so a member is never absent from both), then marks the counter document with
// shared.FieldMemberCollection, after which instances read and create its members in
// shared.MembersCollection only (within Options.ShardCountCacheTTL). Until then, instances create
// a new member in both collections: a second pass after that TTL moves those. Nothing is counted
// again or lost, provided no instance of a release before shared.MembersCollection still runs
// (those read the legacy collection only). It is safe to run any number of times.
func (s *Store) MoveLegacyMembers(ctx context.Context) (LegacyMembersPass, error) {
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
		case status.Code(err) != codes.NotFound: // NotFound: a deleted counter's leftovers
			return pass, fmt.Errorf("move legacy members: mark counter %q: %w", ref.ID, err)
		}
	}
}

// moveLegacyMembersOf moves the legacy member documents of counter document ref, in commits of at
// most maxWritesPerBatch writes, and returns how many it moved.
func (s *Store) moveLegacyMembersOf(ctx context.Context, ref *firestore.DocumentRef) (int, error) {
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
