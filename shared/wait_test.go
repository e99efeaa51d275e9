package shared

import (
	"context"
	"errors"
	"sync"
	"testing"
)

func TestWait(t *testing.T) {
	var wg sync.WaitGroup
	if err := Wait(context.Background(), &wg); err != nil {
		t.Errorf("Wait on an idle WaitGroup: %v, want nil", err)
	}
	wg.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Wait(ctx, &wg); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a pending member and an ended context: %v, want context.Canceled", err)
	}
	release := make(chan struct{})
	go func() { <-release; wg.Done() }()
	close(release)
	if err := Wait(context.Background(), &wg); err != nil {
		t.Errorf("Wait once the member is done: %v, want nil", err)
	}
}
