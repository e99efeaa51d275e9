package deploycheck_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestNoFirebaseDeployFromHereReplacesAnAppsRulesOrIndexes: a `firebase deploy` run in this folder
// must not reach an app's database. The Firebase CLI reads firebase.json: one naming a rules file
// would replace the app's whole ruleset with it, and one naming an index file would offer to delete
// (with --force, delete) every composite index and field setting of the database it does not list,
// the app's. So the repository has no firebase.json that names either; apps add the counters' rules
// (make rules) and indexes (firestore.indexes.json) to their own files.
func TestNoFirebaseDeployFromHereReplacesAnAppsRulesOrIndexes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "firebase.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		Firestore json.RawMessage `json:"firestore"`
	}
	if err := json.Unmarshal(data, &config); err != nil {
		t.Fatalf("firebase.json: %v", err)
	}
	// firestore is an object, or an array of them (one per database).
	var databases []map[string]any
	if len(config.Firestore) > 0 && json.Unmarshal(config.Firestore, &databases) != nil {
		var one map[string]any
		if err := json.Unmarshal(config.Firestore, &one); err != nil {
			t.Fatalf("firebase.json firestore: %v", err)
		}
		databases = append(databases, one)
	}
	for _, db := range databases {
		for _, key := range []string{"rules", "indexes"} {
			if db[key] != nil {
				t.Errorf("firebase.json names firestore %s %v: `firebase deploy` from this folder would replace an app's %s", key, db[key], key)
			}
		}
	}
}
