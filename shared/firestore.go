package shared

import (
	"context"
	"errors"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NewFirestoreClient connects to database in project (empty: detected from the credentials). With
// FIRESTORE_EMULATOR_HOST set, the client talks to the emulator without credentials.
func NewFirestoreClient(ctx context.Context, project, database string, opts ...option.ClientOption) (*firestore.Client, error) {
	id := project
	if id == "" {
		id = firestore.DetectProjectID
	}
	client, err := firestore.NewClientWithDatabase(ctx, id, database, opts...)
	if err != nil {
		return nil, fmt.Errorf("firestore client for project %q database %q: %w", project, database, err)
	}
	return client, nil
}

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
