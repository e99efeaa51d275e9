package functions

import (
	"context"
	"strings"
	"testing"

	"github.com/shardcount/counters/shared"
)

func TestNewFirestoreClient(t *testing.T) {
	// With the emulator variable set the client is built without credentials and gRPC dials lazily,
	// so no server needs to run at this address.
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	schema := shared.Schema{Counters: "counters", Rollups: "rollups", Dedupe: "counter_dedupe"}
	for _, tt := range []struct{ database, wantPath string }{
		{"(default)", "projects/p/databases/(default)/documents/counters/likes"},
		{"countersdb", "projects/p/databases/countersdb/documents/counters/likes"},
	} {
		t.Run(tt.database, func(t *testing.T) {
			c, err := newFirestoreClient(context.Background(), "p", tt.database)
			if err != nil {
				t.Fatalf("newFirestoreClient: %v", err)
			}
			defer c.Close()
			if got := schema.CounterRef(c, "likes").Path; got != tt.wantPath {
				t.Errorf("CounterRef path = %q, want %q", got, tt.wantPath)
			}
		})
	}
}

func TestNewFirestoreClientErrorNamesDatabase(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	c, err := newFirestoreClient(context.Background(), "p", "") // the library refuses an empty database ID
	if err == nil {
		c.Close()
		t.Fatal("newFirestoreClient with empty database = nil error, want error")
	}
	for _, want := range []string{`project "p"`, `database ""`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}
