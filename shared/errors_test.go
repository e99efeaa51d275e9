package shared

import (
	"context"
	"errors"
	"fmt"
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
