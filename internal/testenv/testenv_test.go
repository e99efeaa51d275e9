package testenv_test

import (
	"net/http"
	"testing"

	"github.com/shardcount/counters/internal/testenv"
)

// TestProjectsGetProductionRules: a project made by testenv holds client reads to firestore.rules
// (roll-ups readable, shards denied); a project without rules, as the emulator makes by default,
// would let a client read everything, which is what loading the rules prevents.
func TestProjectsGetProductionRules(t *testing.T) {
	project := testenv.Project(t)
	if got := testenv.ClientGetStatus(t, project, "counters/likes/shards/0"); got != http.StatusForbidden {
		t.Errorf("client read of a shard in a test project: HTTP %d, want 403 (rules loaded)", got)
	}
	if got := testenv.ClientGetStatus(t, project, "rollups/likes"); got != http.StatusNotFound {
		t.Errorf("client read of a missing roll-up: HTTP %d, want 404 (allowed, absent)", got)
	}
	if got := testenv.ClientGetStatus(t, testenv.NewProjectID(), "counters/likes/shards/0"); got == http.StatusForbidden {
		t.Errorf("a project without rules denied the read (HTTP %d): this test cannot tell loaded rules apart", got)
	}
}
