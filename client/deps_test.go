package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoneOfTheFunctionsDependencies: a backend importing the client builds none of what
// only the functions need (Firestore, the functions framework, CloudEvents, the Firebase Admin SDK,
// Pub/Sub, the project's own server packages).
func TestImportsNoneOfTheFunctionsDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/shardcount/counters/client").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	allowed := map[string]bool{"github.com/shardcount/counters/client": true, "github.com/shardcount/counters/shared/wire": true,
		"github.com/shardcount/counters/version": true}
	forbidden := []string{"cloud.google.com/go/firestore", "cloud.google.com/go/pubsub", "github.com/GoogleCloudPlatform/functions-framework-go",
		"github.com/cloudevents/", "firebase.google.com/", "go.uber.org/zap"}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/shardcount/counters") && !allowed[p] {
			t.Errorf("client depends on %s", p)
		}
		for _, f := range forbidden {
			if strings.HasPrefix(p, f) {
				t.Errorf("client depends on %s", p)
			}
		}
	}
}
