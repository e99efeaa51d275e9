package counter

import (
	"context"
	"testing"
	"time"

	"github.com/shardcount/counters/shared/wire"
)

// TestIncrementRefusesARequestOfNoOneKindBeforeWriting: a request that mixes kinds, or gives a kind a
// field it does not take, is refused before anything is planned or committed.
func TestIncrementRefusesARequestOfNoOneKindBeforeWriting(t *testing.T) {
	key := &Key{Source: SourceHTTP, ID: "k"}
	for name, r := range map[string]Request{
		"member and limit":     {Counter: "c", Delta: 1, Member: "ann", Caller: "user:ann", Limit: 1},
		"member with At":       {Counter: "c", Member: "ann", At: time.Unix(1, 0)},
		"limited with At":      {Counter: "c", Delta: 1, Caller: "user:ann", Limit: 1, At: time.Unix(1, 0)},
		"batch without a key":  {Batch: []wire.Increment{{Counter: "c", Delta: 1}}},
		"batch and a counter":  {Counter: "c", Key: key, Batch: []wire.Increment{{Counter: "c", Delta: 1}}},
		"batch of a member":    {Key: key, Member: "ann", Batch: []wire.Increment{{Counter: "c", Delta: 1}}},
		"empty batch":          {Key: key, Batch: []wire.Increment{}},
		"caller without limit": {Counter: "c", Delta: 1, Caller: "user:ann"},
		"member of delta 2":    {Counter: "c", Delta: 2, Member: "ann"},
	} {
		t.Run(name, func(t *testing.T) {
			plans := &fakePlans{}
			s := newFakeStore(plans)
			if res, err := s.Increment(context.Background(), r); err == nil || len(res.Applied) > 0 || len(plans.committed) > 0 {
				t.Errorf("Increment: %+v, %v, %d commits; want an error and no commit", res, err, len(plans.committed))
			}
		})
	}
}

// TestIncrementAnswersADeltaWithItsShard: a plain delta's Result is the shard it landed on, counted.
func TestIncrementAnswersADeltaWithItsShard(t *testing.T) {
	res, err := newFakeStore(&fakePlans{}).Increment(context.Background(), Request{Counter: "c", Delta: 3})
	want := AppliedIncrement{Counter: "c", Delta: 3, Shard: 7}
	if err != nil || len(res.Applied) != 1 || res.Applied[0] != want || !res.Counted || res.Duplicate {
		t.Errorf("Increment: %+v, %v; want counted %+v", res, err, want)
	}
}
