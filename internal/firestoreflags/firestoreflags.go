// Package firestoreflags adds -project and -database flags.
package firestoreflags

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"cloud.google.com/go/firestore"
)

// Database is the database the flags name.
type Database struct {
	project, database *string
}

// Add registers the flags with the given defaults.
func Add(flags *flag.FlagSet, project, database string) *Database {
	return &Database{
		project:  flags.String("project", project, "Google Cloud project (default $GOOGLE_CLOUD_PROJECT)"),
		database: flags.String("database", database, "Firestore database"),
	}
}

// Client opens the named database; no project is an error.
func (d *Database) Client(ctx context.Context) (*firestore.Client, error) {
	if *d.project == "" {
		return nil, errors.New("no project: pass -project or set GOOGLE_CLOUD_PROJECT")
	}
	client, err := firestore.NewClientWithDatabase(ctx, *d.project, *d.database)
	if err != nil {
		return nil, fmt.Errorf("firestore client: %w", err)
	}
	return client, nil
}
