// Package firestoreflags gives the project's command-line tools the database they work on: the
// -project and -database flags, and a Firestore client of what they name (the emulator's when
// FIRESTORE_EMULATOR_HOST is set).
package firestoreflags

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"cloud.google.com/go/firestore"
)

// Database is the database a tool's -project and -database flags name.
type Database struct {
	project, database *string
}

// Add adds -project and -database to flags, with the defaults project (GOOGLE_CLOUD_PROJECT's value,
// as the caller read it) and database.
func Add(flags *flag.FlagSet, project, database string) *Database {
	return &Database{
		project:  flags.String("project", project, "Google Cloud project (default $GOOGLE_CLOUD_PROJECT)"),
		database: flags.String("database", database, "Firestore database"),
	}
}

// Client returns a client of the database the parsed flags name; naming no project is an error.
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
