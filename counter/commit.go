package counter

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Bounds of a commit and of settling it, whatever the caller's context says.
const (
	commitTimeout  = 10 * time.Second
	resolveTimeout = 5 * time.Second
)

// planStore sends plans to Firestore (firestorePlans) or a unit tests' fake.
type planStore interface {
	commit(ctx context.Context, plan *commitPlan) error                // atomically
	inspect(ctx context.Context, plan *commitPlan) (inspection, error) // reads back what it creates
	// fence makes the plan never apply.
	fence(ctx context.Context, plan *commitPlan) error
}

// writeState is a plan's commit as read back.
type writeState int

const (
	writeAbsent writeState = iota // not applied (yet)
	writeApplied
	writeFenced // never will apply
)

// inspection is what reading back a plan found.
type inspection struct {
	write      writeState
	duplicates map[int]dedupeRecordData // others' records of the plan's keys, by dedupes index
	existing   []string                 // counters it meant to create
}

// commitResult is what became of one plan.
type commitResult struct {
	applied   bool
	conflicts inspection // after someone else's AlreadyExists
	err       error
}

// committer commits plans and settles their outcomes.
type committer struct{ plans planStore }

// send commits plan and settles its outcome: "not applied" only when it never will apply.
func (c committer) send(ctx context.Context, plan *commitPlan) commitResult {
	err := c.plans.commit(ctx, plan)
	if err == nil {
		return commitResult{applied: true}
	}
	if res, ok := c.readBack(ctx, plan, err); ok {
		return res
	}
	return c.settle(ctx, plan, err)
}

// readBack settles a commit refused with AlreadyExists from what it creates; false when it cannot.
func (c committer) readBack(ctx context.Context, plan *commitPlan, err error) (_ commitResult, ok bool) {
	if status.Code(err) != codes.AlreadyExists {
		return commitResult{}, false
	}
	in, ierr := c.plans.inspect(ctx, plan)
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

// settle finds out whether a failed commit applied: it fences the write record, or reads back, or
// resends once.
func (c committer) settle(ctx context.Context, plan *commitPlan, cause error) commitResult {
	if !plan.writeRecord {
		if status.Code(cause) == codes.NotFound {
			return c.refusedKeyed(ctx, plan, cause)
		}
		return c.resend(ctx, plan, cause)
	}
	ferr := c.plans.fence(ctx, plan)
	if ferr == nil {
		return commitResult{err: notApplied(cause)}
	}
	if status.Code(ferr) == codes.AlreadyExists {
		in, ierr := c.plans.inspect(ctx, plan)
		switch {
		case ierr != nil:
			ferr = ierr
		case in.write == writeApplied:
			return commitResult{applied: true}
		case in.write == writeFenced: // our own fence, resent
			return commitResult{err: notApplied(cause)}
		}
	}
	return commitResult{err: outcomeUnknown(fmt.Errorf("%w; settling it failed: %w", cause, ferr))}
}

// resend sends a keyed-only plan once more; its dedupe records let one attempt apply.
func (c committer) resend(ctx context.Context, plan *commitPlan, cause error) commitResult {
	err := c.plans.commit(ctx, plan)
	if err == nil {
		return commitResult{applied: true}
	}
	if res, ok := c.readBack(ctx, plan, err); ok {
		return res
	}
	return commitResult{err: outcomeUnknown(fmt.Errorf("%w; sending it again failed: %w", cause, err))}
}

// refusedKeyed settles a keyed-only plan refused with NotFound by reading back.
func (c committer) refusedKeyed(ctx context.Context, plan *commitPlan, cause error) commitResult {
	in, err := c.plans.inspect(ctx, plan)
	switch {
	case err != nil:
		return commitResult{err: outcomeUnknown(fmt.Errorf("%w; reading it back failed: %w", cause, err))}
	case in.write == writeApplied:
		return commitResult{applied: true}
	}
	return commitResult{conflicts: in, err: notApplied(cause)}
}
