package shared

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// IsRetryable reports whether err is a transient Firestore failure that the same request may
// survive later: the caller should answer 503 (HTTP) or fail the event so the platform redelivers.
func IsRetryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Aborted, codes.DeadlineExceeded, codes.ResourceExhausted:
		return true
	}
	return false
}
