package gate

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestGateRefusesAfterCloseAndWaitsForWhatItAdmitted: work admitted before Close keeps Wait waiting
// until it leaves; after Close nothing more is admitted.
func TestGateRefusesAfterCloseAndWaitsForWhatItAdmitted(t *testing.T) {
	var g Gate
	if !g.Enter() {
		t.Fatal("an open gate refused work")
	}
	g.Close()
	if g.Enter() {
		t.Fatal("a closed gate admitted work")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with admitted work under way: %v, want the context's error", err)
	}
	g.Leave()
	if err := g.Wait(context.Background()); err != nil {
		t.Fatalf("Wait once the admitted work left: %v, want nil", err)
	}
}
