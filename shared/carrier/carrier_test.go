package carrier

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestCarrierHoldsOneCallerUntilAllWorkEnds: of ten callers whose work waits for a release, the first
// carries and the others return at once; the carrier returns once every work has ended. A caller
// arriving MaxCarry later takes over, and the previous carrier returns.
func TestCarrierHoldsOneCallerUntilAllWorkEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Carrier
		release := make(chan struct{})
		work := func(context.Context) { <-release }
		ctx := context.Background()
		carrierDone := make(chan bool)
		go func() {
			carried, err := c.Carry(ctx, work)
			if err != nil {
				t.Error(err)
			}
			carrierDone <- carried
		}()
		synctest.Wait()
		for i := range 9 {
			if carried, err := c.Carry(ctx, work); carried || err != nil {
				t.Fatalf("caller %d: carried %t, %v; want an answer at once", i+2, carried, err)
			}
		}
		select {
		case <-carrierDone:
			t.Fatal("the carrier returned while work was outstanding")
		default:
		}

		time.Sleep(MaxCarry)
		takeover := make(chan bool)
		go func() {
			carried, _ := c.Carry(ctx, work)
			takeover <- carried
		}()
		if carried := <-carrierDone; !carried {
			t.Error("the first caller did not carry")
		}
		synctest.Wait()
		select {
		case <-takeover:
			t.Fatal("the new carrier returned while work was outstanding")
		default:
		}
		close(release)
		if carried := <-takeover; !carried {
			t.Error("the caller after MaxCarry did not take over")
		}
	})
}
