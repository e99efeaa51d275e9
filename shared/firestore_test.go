package shared

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "Unavailable", err: status.Error(codes.Unavailable, "try later"), want: true},
		{name: "Aborted", err: status.Error(codes.Aborted, "contention"), want: true},
		{name: "DeadlineExceeded status", err: status.Error(codes.DeadlineExceeded, "slow"), want: true},
		{name: "ResourceExhausted", err: status.Error(codes.ResourceExhausted, "quota"), want: true},
		{name: "NotFound", err: status.Error(codes.NotFound, "no doc"), want: false},
		{name: "InvalidArgument", err: status.Error(codes.InvalidArgument, "bad"), want: false},
		{name: "PermissionDenied", err: status.Error(codes.PermissionDenied, "no"), want: false},
		{name: "Internal", err: status.Error(codes.Internal, "boom"), want: false},
		{name: "FailedPrecondition", err: status.Error(codes.FailedPrecondition, "index"), want: false},
		{name: "AlreadyExists", err: status.Error(codes.AlreadyExists, "exists"), want: false},
		{name: "Canceled status", err: status.Error(codes.Canceled, "canceled"), want: false},
		{name: "nil", err: nil, want: false},
		{name: "plain error", err: errors.New("unavailable"), want: false},
		{name: "plain formatted error", err: fmt.Errorf("deadline exceeded: %d", 3), want: false},
		{name: "context.Canceled", err: context.Canceled, want: false},
		{name: "context.DeadlineExceeded", err: context.DeadlineExceeded, want: true},
		{name: "wrapped context.DeadlineExceeded", err: fmt.Errorf("get shard: %w", context.DeadlineExceeded), want: true},
		{name: "wrapped Unavailable", err: fmt.Errorf("write shard: %w", status.Error(codes.Unavailable, "x")), want: true},
		{name: "double wrapped Aborted", err: fmt.Errorf("txn: %w", fmt.Errorf("commit: %w", status.Error(codes.Aborted, "x"))), want: true},
		{name: "wrapped NotFound", err: fmt.Errorf("read: %w", status.Error(codes.NotFound, "x")), want: false},
		{name: "status formatted with %v is not unwrapped", err: fmt.Errorf("write: %v", status.Error(codes.Unavailable, "x")), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsRetryable(tt.err); got != tt.want {
				t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestIsRetryableExpiredContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ctx.Done()
	if !IsRetryable(ctx.Err()) {
		t.Errorf("IsRetryable(%v) = false, want true for an expired deadline", ctx.Err())
	}
}

func TestNewFirestoreClient(t *testing.T) {
	// With the emulator variable set the client is built without credentials and gRPC dials lazily,
	// so no server needs to run at this address.
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	tests := []struct {
		name     string
		database string
		wantPath string
	}{
		{name: "default database", database: "(default)", wantPath: "projects/p/databases/(default)/documents/counters/likes"},
		{name: "named database", database: "countersdb", wantPath: "projects/p/databases/countersdb/documents/counters/likes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewFirestoreClient(context.Background(), "p", tt.database)
			if err != nil {
				t.Fatalf("NewFirestoreClient: %v", err)
			}
			defer c.Close()
			if got := (Schema{Counters: "counters"}).CounterRef(c, "likes").Path; got != tt.wantPath {
				t.Errorf("CounterRef path = %q, want %q", got, tt.wantPath)
			}
		})
	}
}

func TestNewFirestoreClientErrorNamesDatabase(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	c, err := NewFirestoreClient(context.Background(), "p", "") // the library refuses an empty database ID
	if err == nil {
		c.Close()
		t.Fatal("NewFirestoreClient with empty database = nil error, want error")
	}
	for _, want := range []string{`project "p"`, `database ""`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}
