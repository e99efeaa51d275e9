package counter

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Bounds of one commit. They hold whatever the caller's context says: a commit that was sent is seen
// through, so that its requests learn its outcome.
const (
	// commitTimeout bounds one commit, the client library's own retries of it included.
	commitTimeout = 10 * time.Second
	// resolveTimeout bounds what settles a failed commit: reading back what it creates, fencing.
	resolveTimeout = 5 * time.Second
)

// planStore sends plans to the database: Firestore in production (firestorePlans), a scripted fake in
// unit tests.
type planStore interface {
	// commit applies the plan atomically.
	commit(ctx context.Context, plan *commitPlan) error
	// inspect reads back the documents the plan creates.
	inspect(ctx context.Context, plan *commitPlan) (inspection, error)
	// fence creates the plan's write record alone, marked as a fence, so the plan can never apply.
	fence(ctx context.Context, plan *commitPlan) error
}

// writeState is what the database says about a plan's commit.
type writeState int

const (
	writeAbsent  writeState = iota // no sign of it: the commit has not applied
	writeApplied                   // the commit applied
	writeFenced                    // a fence holds the write ID: the commit never will apply
)

// inspection is what reading back a plan's documents found.
type inspection struct {
	write writeState
	// duplicates are the dedupe records of the plan's keys created by other writes, by index in
	// plan.dedupes.
	duplicates map[int]dedupeRecordData
	// existing lists the counters the plan meant to create that exist.
	existing []string
}

// commitResult is what became of one plan.
type commitResult struct {
	applied bool
	// conflicts, after an AlreadyExists that was not ours: the documents in the way.
	conflicts inspection
	// err, when not applied: wraps ErrNotApplied or ErrOutcomeUnknown.
	err error
}

// apply commits plan and settles its outcome: it answers "not applied" only when the commit certainly
// did not and never will apply.
func (s *Store) apply(ctx context.Context, plan *commitPlan) commitResult {
	err := s.plans.commit(ctx, plan)
	if err == nil {
		return commitResult{applied: true}
	}
	if res, ok := s.readBack(ctx, plan, err); ok {
		return res
	}
	return s.settle(ctx, plan, err)
}

// readBack decides a commit that failed with AlreadyExists from the documents it creates: applied (an
// earlier attempt of it did), or not applied (documents created by others are in its way). ok is
// false when it cannot tell.
func (s *Store) readBack(ctx context.Context, plan *commitPlan, err error) (_ commitResult, ok bool) {
	if status.Code(err) != codes.AlreadyExists {
		return commitResult{}, false
	}
	in, ierr := s.plans.inspect(ctx, plan)
	switch {
	case ierr != nil:
		return commitResult{}, false
	case in.write == writeApplied:
		return commitResult{applied: true}, true
	case len(in.duplicates) > 0 || len(in.existing) > 0:
		return commitResult{conflicts: in, err: notApplied(err)}, true
	}
	return commitResult{}, false
}

// settle finds out whether a commit that failed with cause applied: by fencing its write record, or,
// for a plan without one (keyed requests only), by reading back its dedupe records after NotFound,
// else by sending it once more.
func (s *Store) settle(ctx context.Context, plan *commitPlan, cause error) commitResult {
	if !plan.writeRecord {
		if status.Code(cause) == codes.NotFound {
			return s.refusedKeyed(ctx, plan, cause)
		}
		return s.resend(ctx, plan, cause)
	}
	ferr := s.plans.fence(ctx, plan)
	if ferr == nil {
		return commitResult{err: notApplied(cause)}
	}
	if status.Code(ferr) == codes.AlreadyExists {
		in, ierr := s.plans.inspect(ctx, plan)
		switch {
		case ierr != nil:
			ferr = ierr
		case in.write == writeApplied:
			return commitResult{applied: true}
		case in.write == writeFenced: // our own fence, re-sent by the client library
			return commitResult{err: notApplied(cause)}
		}
	}
	return commitResult{err: outcomeUnknown(fmt.Errorf("%w; settling it failed: %w", cause, ferr))}
}

// resend sends a plan of keyed requests only once more after it failed with cause; its dedupe
// records let at most one attempt apply.
func (s *Store) resend(ctx context.Context, plan *commitPlan, cause error) commitResult {
	err := s.plans.commit(ctx, plan)
	if err == nil {
		return commitResult{applied: true}
	}
	if res, ok := s.readBack(ctx, plan, err); ok {
		return res
	}
	return commitResult{err: outcomeUnknown(fmt.Errorf("%w; sending it again failed: %w", cause, err))}
}

// refusedKeyed settles a plan of keyed requests only whose commit was refused with NotFound (its
// touched stamp or shard update found a document missing): that attempt applied nothing, and any earlier attempt
// that applied left dedupe records carrying the plan's write ID. So it is applied if they are found,
// and otherwise certainly not applied; while the counter stays deleted no attempt of it can apply
// (each carries the same stamp), and the next plan's dedupe records would catch one that did.
func (s *Store) refusedKeyed(ctx context.Context, plan *commitPlan, cause error) commitResult {
	in, err := s.plans.inspect(ctx, plan)
	switch {
	case err != nil:
		return commitResult{err: outcomeUnknown(fmt.Errorf("%w; reading it back failed: %w", cause, err))}
	case in.write == writeApplied:
		return commitResult{applied: true}
	}
	return commitResult{conflicts: in, err: notApplied(cause)}
}
