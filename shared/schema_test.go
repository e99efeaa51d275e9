package shared

import (
	"context"
	"testing"

	"cloud.google.com/go/firestore"
)

// offlineClient returns a Firestore client for project "p" that never dials a server: it points the
// client at an emulator address nothing listens on, and gRPC connects lazily.
func offlineClient(t *testing.T) *firestore.Client {
	t.Helper()
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	c, err := firestore.NewClient(context.Background(), "p")
	if err != nil {
		t.Fatalf("firestore.NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

const docsRoot = "projects/p/databases/(default)/documents/"

// defaultSchema names the collections as the functions do by default (functions/config).
var defaultSchema = Schema{Counters: "counters", Rollups: "rollups", Dedupe: "counter_dedupe"}

func TestSchemaRefs(t *testing.T) {
	c := offlineClient(t)
	def := defaultSchema
	custom := Schema{Counters: "ctrs", Rollups: "sums"}
	tests := []struct {
		name       string
		path       string
		wantPath   string
		wantID     string
		wantParent string // parent collection's ID
	}{
		{name: "CounterRef default", path: def.CounterRef(c, "likes").Path,
			wantPath: docsRoot + "counters/likes"},
		{name: "CounterRef custom", path: custom.CounterRef(c, "likes").Path,
			wantPath: docsRoot + "ctrs/likes"},
		{name: "CounterRef unicode", path: def.CounterRef(c, "いいね").Path,
			wantPath: docsRoot + "counters/いいね"},
		{name: "ShardsRef default", path: def.ShardsRef(c, "likes").Path,
			wantPath: docsRoot + "counters/likes/shards"},
		{name: "ShardsRef custom", path: custom.ShardsRef(c, "likes").Path,
			wantPath: docsRoot + "ctrs/likes/shards"},
		{name: "ShardRef 0", path: def.ShardRef(c, "likes", 0).Path,
			wantPath: docsRoot + "counters/likes/shards/0"},
		{name: "ShardRef 3", path: def.ShardRef(c, "likes", 3).Path,
			wantPath: docsRoot + "counters/likes/shards/3"},
		{name: "ShardRef 999", path: def.ShardRef(c, "likes", 999).Path,
			wantPath: docsRoot + "counters/likes/shards/999"},
		{name: "ShardRef custom", path: custom.ShardRef(c, "views", 12).Path,
			wantPath: docsRoot + "ctrs/views/shards/12"},
		{name: "RollupRef default", path: def.RollupRef(c, "likes").Path,
			wantPath: docsRoot + "rollups/likes"},
		{name: "RollupRef custom", path: custom.RollupRef(c, "likes").Path,
			wantPath: docsRoot + "sums/likes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.path != tt.wantPath {
				t.Errorf("Path = %q, want %q", tt.path, tt.wantPath)
			}
		})
	}
}

func TestSchemaRefIDs(t *testing.T) {
	c := offlineClient(t)
	s := defaultSchema
	shard := s.ShardRef(c, "likes", 7)
	if shard.ID != "7" {
		t.Errorf("ShardRef ID = %q, want %q", shard.ID, "7")
	}
	if shard.Parent.ID != ShardsCollection {
		t.Errorf("ShardRef parent collection = %q, want %q", shard.Parent.ID, ShardsCollection)
	}
	if shard.Parent.Parent.Path != s.CounterRef(c, "likes").Path {
		t.Errorf("ShardRef grandparent = %q, want the counter document %q", shard.Parent.Parent.Path, s.CounterRef(c, "likes").Path)
	}
	if got := s.RollupRef(c, "likes").ID; got != "likes" {
		t.Errorf("RollupRef ID = %q, want %q", got, "likes")
	}
}

func TestFieldNames(t *testing.T) {
	// These are the guide's data model; changing them breaks interop with its client snippets.
	tests := []struct{ name, got, want string }{
		{"FieldNumShards", FieldNumShards, "num_shards"},
		{"FieldCount", FieldCount, "count"},
		{"FieldUpdatedAt", FieldUpdatedAt, "updated_at"},
		{"ShardsCollection", ShardsCollection, "shards"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
			}
		})
	}
}

func TestShardPathPattern(t *testing.T) {
	tests := []struct {
		name   string
		schema Schema
		want   string
	}{
		{name: "default", schema: defaultSchema, want: "counters/{counter}/shards/{shard}"},
		{name: "custom", schema: Schema{Counters: "ctrs", Rollups: "sums"}, want: "ctrs/{counter}/shards/{shard}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.schema.ShardPathPattern(); got != tt.want {
				t.Errorf("ShardPathPattern() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseShardPath(t *testing.T) {
	def := defaultSchema
	custom := Schema{Counters: "ctrs", Rollups: "sums"}
	tests := []struct {
		name   string
		schema Schema
		path   string
		wantID string
		wantOK bool
	}{
		{name: "relative", schema: def, path: "counters/x/shards/3", wantID: "x", wantOK: true},
		{name: "documents prefix", schema: def, path: "documents/counters/x/shards/3", wantID: "x", wantOK: true},
		{name: "unicode id", schema: def, path: "counters/いいね/shards/0", wantID: "いいね", wantOK: true},
		{name: "custom collection", schema: custom, path: "ctrs/likes/shards/1", wantID: "likes", wantOK: true},
		{name: "custom collection with prefix", schema: custom, path: "documents/ctrs/likes/shards/1", wantID: "likes", wantOK: true},
		{name: "wrong collection", schema: def, path: "other/x/shards/3"},
		{name: "default collection under custom schema", schema: custom, path: "counters/x/shards/3"},
		{name: "rollups path", schema: def, path: "rollups/x"},
		{name: "rollups path four segments", schema: def, path: "rollups/x/shards/3"},
		{name: "counter document", schema: def, path: "counters/x"},
		{name: "shards collection", schema: def, path: "counters/x/shards"},
		{name: "too long", schema: def, path: "counters/x/shards/3/more/y"},
		{name: "five segments", schema: def, path: "counters/x/shards/3/more"},
		{name: "wrong subcollection", schema: def, path: "counters/x/other/3"},
		{name: "empty counter id", schema: def, path: "counters//shards/3"},
		{name: "empty shard id", schema: def, path: "counters/x/shards/"},
		{name: "empty path", schema: def, path: ""},
		{name: "documents only", schema: def, path: "documents/"},
		{name: "leading slash", schema: def, path: "/counters/x/shards/3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := tt.schema.ParseShardPath(tt.path)
			if id != tt.wantID || ok != tt.wantOK {
				t.Errorf("ParseShardPath(%q) = (%q, %v), want (%q, %v)", tt.path, id, ok, tt.wantID, tt.wantOK)
			}
		})
	}
}

func TestParseShardPathRoundTrip(t *testing.T) {
	// The path a ShardRef names must parse back to its counter ID.
	c := offlineClient(t)
	for _, s := range []Schema{defaultSchema, {Counters: "ctrs", Rollups: "sums"}} {
		for _, id := range []string{"likes", "a", "いいね", ".a", "__x"} {
			t.Run(s.Counters+"/"+id, func(t *testing.T) {
				full := s.ShardRef(c, id, 4).Path
				rel := full[len("projects/p/databases/(default)/"):]
				got, ok := s.ParseShardPath(rel)
				if !ok || got != id {
					t.Errorf("ParseShardPath(%q) = (%q, %v), want (%q, true)", rel, got, ok, id)
				}
			})
		}
	}
}
