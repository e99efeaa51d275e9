package functions

import (
	"context"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"
)

// newFirestoreClient connects to database in project ("" detects the project from the runtime's
// credentials). With FIRESTORE_EMULATOR_HOST set, the client talks to the emulator without credentials.
func newFirestoreClient(ctx context.Context, project, database string, opts ...option.ClientOption) (*firestore.Client, error) {
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
