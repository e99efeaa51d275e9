package manifest_test

import (
	"strings"
	"testing"

	"github.com/shardcount/counters/internal/manifest"
)

// TestRolesAreLeastPrivilege: Firestore roles hold on the deployment's database only, storage roles
// on Cloud Functions' source bucket of the region only, Artifact Registry roles on the functions'
// repository only, and each guard's role only with its setting on.
func TestRolesAreLeastPrivilege(t *testing.T) {
	scoped := map[string]string{
		"roles/datastore.": "projects/{project}/databases/{database}",
		"roles/storage.":   "projects/_/buckets/gcf-v2-sources-{project_number}-{region}",
	}
	gated := map[string]string{
		"roles/firebaseauth.viewer":            "CHECK_REVOKED_TOKENS",
		"roles/firebaseappcheck.tokenVerifier": "APP_CHECK_REPLAY_PROTECTION",
	}
	for _, r := range manifest.Roles() {
		for prefix, resource := range scoped {
			if strings.HasPrefix(r.Role, prefix) && (r.Condition == nil || r.Condition.Resource != resource) {
				t.Errorf("%s of %s is not limited to %s", r.Role, r.Account, resource)
			}
		}
		if strings.HasPrefix(r.Role, "roles/artifactregistry.") != r.OnRepository {
			t.Errorf("%s of %s: on the repository %t, want only Artifact Registry roles there", r.Role, r.Account, r.OnRepository)
		}
		if r.Setting != gated[r.Role] {
			t.Errorf("%s of %s needs setting %q, want %q", r.Role, r.Account, r.Setting, gated[r.Role])
		}
	}
}
