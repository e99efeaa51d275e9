package counter

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/shardcount/counters/shared/wire"
)

// TestGroupBatchStopsBeforeItsSumWouldOverflow: requests of one counter whose deltas together pass
// int64 are split over batches, so none is refused for the others' sake.
func TestGroupBatchStopsBeforeItsSumWouldOverflow(t *testing.T) {
	const big = int64(1) << 62
	var queue []batched
	for _, d := range []int64{big, big, 1, -big} {
		queue = append(queue, unkeyed("c", d))
	}
	var sizes []int
	for len(queue) > 0 {
		n := batchSize(queue)
		sizes = append(sizes, n)
		queue = queue[n:]
	}
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 3 {
		t.Errorf("batches of %v requests, want [1 3]: 2^62 + 2^62 overflows int64", sizes)
	}
}

// TestWriteWhoseSumWouldOverflowIsRefusedBeforeAnythingIsWritten: a batch (or one keyed request)
// whose deltas of one counter sum past int64 fails with ErrDeltaOverflow and ErrNotApplied, and no
// commit is sent.
func TestWriteWhoseSumWouldOverflowIsRefusedBeforeAnythingIsWritten(t *testing.T) {
	plans := &fakePlans{}
	s := newFakeStore(plans)
	r := s.commitBatch(context.Background(), []batched{unkeyed("c", math.MaxInt64), unkeyed("c", 1)})[0]
	if !errors.Is(r.err, ErrDeltaOverflow) || !errors.Is(r.err, ErrNotApplied) {
		t.Errorf("batch summing past int64: %v; want ErrDeltaOverflow, not applied", r.err)
	}
	incs := []wire.Increment{{Counter: "c", Delta: math.MinInt64}, {Counter: "c", Delta: -1}}
	if _, err := s.Increment(context.Background(), Request{Key: &Key{Source: SourceHTTP, ID: "k"}, Batch: incs}); !errors.Is(err, ErrDeltaOverflow) || !errors.Is(err, ErrNotApplied) {
		t.Errorf("keyed request summing past int64: %v; want ErrDeltaOverflow, not applied", err)
	}
	if len(plans.committed) != 0 {
		t.Errorf("%d commits sent, want none", len(plans.committed))
	}
}
