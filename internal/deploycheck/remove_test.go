package deploycheck_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/counters/internal/deploycheck"
)

// sourceLabel is the label deploy.sh gives the functions of the counter sources (its value is the
// manifest function's name), by which it finds them to delete them.
const sourceLabel = "counters_source"

// createdBy lists what deploy.sh's commands create, and deletedBy what --remove's commands delete, in
// the same words, sorted and without repeats: "function NAME", "topic NAME", "subscription NAME",
// "job NAME", "account EMAIL", "repository NAME" (its grants go with it), "role MEMBER ROLE
// CONDITION", and "functions labelled KEY" for the
// functions of the counter sources, which a deploy creates one per declared pattern with the label
// KEY and --remove deletes as it finds them by that label (a dry run names them
// DEPLOYED_SOURCES_NAME after the gcloud functions list --filter=labels.KEY:* that finds them).
func createdBy(commands [][]string) []string {
	var out []string
	for _, words := range commands {
		line, f := strings.Join(words, " "), flags(words)
		switch {
		case strings.HasPrefix(line, "gcloud functions deploy "):
			if labelled(f["--update-labels"], sourceLabel) {
				out = append(out, "functions labelled "+sourceLabel)
				break
			}
			out = append(out, "function "+words[3])
		case strings.HasPrefix(line, "gcloud pubsub topics create "):
			out = append(out, "topic "+words[4])
		case strings.HasPrefix(line, "gcloud pubsub subscriptions create "):
			out = append(out, "subscription "+words[4])
		case strings.HasPrefix(line, "gcloud scheduler jobs create pubsub "):
			out = append(out, "job "+words[5])
		case strings.HasPrefix(line, "gcloud iam service-accounts create "):
			out = append(out, "account "+words[4]+"@p.iam.gserviceaccount.com")
		case strings.HasPrefix(line, "gcloud artifacts repositories create "):
			out = append(out, "repository "+words[4])
		case strings.HasPrefix(line, "gcloud projects add-iam-policy-binding "):
			out = append(out, fmt.Sprintf("role %s %s %s", f["--member"], f["--role"], f["--condition"]))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// labelled reports whether the --update-labels values give the label key.
func labelled(labels []string, key string) bool {
	for _, value := range labels {
		for _, pair := range strings.Split(value, ",") {
			if k, _, _ := strings.Cut(pair, "="); k == key {
				return true
			}
		}
	}
	return false
}

func deletedBy(commands [][]string) []string {
	var out []string
	listedLabel := "" // the label of the latest gcloud functions list --filter=labels.KEY:*
	for _, words := range commands {
		line, f := strings.Join(words, " "), flags(words)
		switch {
		case strings.HasPrefix(line, "gcloud functions list "):
			listedLabel = ""
			for _, filter := range f["--filter"] {
				if key, ok := strings.CutPrefix(filter, "labels."); ok && strings.HasSuffix(key, ":*") {
					listedLabel = strings.TrimSuffix(key, ":*")
				}
			}
		case strings.HasPrefix(line, "gcloud functions delete DEPLOYED_SOURCES_NAME "):
			out = append(out, "functions labelled "+listedLabel)
		case strings.HasPrefix(line, "gcloud functions delete "):
			out = append(out, "function "+words[3])
		case strings.HasPrefix(line, "gcloud pubsub topics delete "):
			out = append(out, "topic "+words[4])
		case strings.HasPrefix(line, "gcloud pubsub subscriptions delete "):
			out = append(out, "subscription "+words[4])
		case strings.HasPrefix(line, "gcloud scheduler jobs delete "):
			out = append(out, "job "+words[4])
		case strings.HasPrefix(line, "gcloud iam service-accounts delete "):
			out = append(out, "account "+words[4])
		case strings.HasPrefix(line, "gcloud artifacts repositories delete "):
			out = append(out, "repository "+words[4])
		case strings.HasPrefix(line, "gcloud projects remove-iam-policy-binding "):
			out = append(out, fmt.Sprintf("role %s %s %s", f["--member"], f["--role"], f["--condition"]))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestRemoveUndoesTheDeploy: deploy.sh --remove --dry-run deletes exactly what the deploy creates
// (every function, opt-in ones included, the functions of the declared counter sources by their
// label, the topics, the subscription, the scheduler job, the functions' repository, the accounts
// and their project roles), and puts back to the database's defaults exactly the field settings the
// deploy sets, with the default collection names and others; it never creates, deploys or grants
// anything.
func TestRemoveUndoesTheDeploy(t *testing.T) {
	requireBash(t)
	useSources(t, twoSources)
	for _, names := range collectionsVariants {
		t.Run(fmt.Sprint(names), func(t *testing.T) {
			args := []string{"--project", "p", "--region", "r"}
			for _, name := range slices.Sorted(maps.Keys(names)) {
				args = append(args, "--env", name+"="+names[name])
			}
			// With every role: --remove revokes the optional checks' whatever the settings.
			deploy, err := deploycheck.DryRun(script, append(args, "--opt-in", "fold-extension-shards",
				"--env", "REQUIRE_ID_TOKEN=true", "--env", "CHECK_REVOKED_TOKENS=true",
				"--env", "REQUIRE_APP_CHECK=true", "--env", "APP_CHECK_REPLAY_PROTECTION=true")...)
			if err != nil {
				t.Fatal(err)
			}
			remove, err := deploycheck.DryRun(script, append(args, "--remove")...)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := deletedBy(remove), createdBy(deploy); !slices.Equal(got, want) {
				t.Errorf("--remove deletes\n  %v\nthe deploy creates\n  %v", got, want)
			}
			reset := scriptGroupSettings(remove)
			for _, words := range remove {
				line := strings.Join(words, " ")
				if strings.HasPrefix(line, "gcloud firestore indexes fields update ") && !strings.Contains(line, "--clear-exemption") ||
					strings.HasPrefix(line, "gcloud firestore fields ttls update ") && !strings.Contains(line, "--disable-ttl") {
					t.Errorf("--remove sets a field instead of resetting it: %s", line)
				}
				if strings.Contains(line, " create ") || strings.Contains(line, " deploy ") || strings.Contains(line, "add-") {
					t.Errorf("--remove creates, deploys or grants: %s", line)
				}
			}
			singleField := slices.DeleteFunc(slices.Clone(deploy), func(words []string) bool {
				return strings.HasPrefix(strings.Join(words, " "), "gcloud firestore indexes composite create ")
			})
			if set := scriptGroupSettings(singleField); !slices.Equal(reset, set) {
				t.Errorf("--remove resets\n  %v\nthe deploy sets\n  %v", reset, set)
			}
		})
	}
}

// removeWithListing runs a real --remove against a fake gcloud that answers the commands starting
// list (words) with listing, and returns what the commands starting deletePrefix delete: the word
// after it.
func removeWithListing(t *testing.T, list, listing, deletePrefix string) []string {
	t.Helper()
	g := newFakeGcloud(t, "FAKE_LISTING="+listing)
	script := strings.Replace(fakeGcloudScript, "case \"$*\" in\n", "case \"$*\" in\n\""+list+" \"*) printf '%s\\n' \"$FAKE_LISTING\" ;;\n", 1)
	if err := os.WriteFile(filepath.Join(g.dir, "gcloud"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	stderr, commands, err := g.deploy(t, "--remove")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var deleted []string
	for _, c := range commands {
		if rest, ok := strings.CutPrefix(c, deletePrefix); ok {
			deleted = append(deleted, strings.Fields(rest)[0])
		}
	}
	return deleted
}

// TestRemoveDeletesOnlyOurCompositeIndexes: a real --remove (against a gcloud that lists the
// database's composite indexes as Firestore does, with the trailing __name__ field) deletes the
// top lists' indexes and none of an app's: not one on another collection group with the same fields,
// not one on the roll-ups with other fields or directions, not one of collection-group scope.
func TestRemoveDeletesOnlyOurCompositeIndexes(t *testing.T) {
	requireBash(t)
	const prefix = "projects/p/databases/(default)/collectionGroups/"
	listing := strings.Join([]string{
		prefix + "rollups/indexes/OURS1\tCOLLECTION\tgroup;count;__name__\tASCENDING;DESCENDING;DESCENDING",
		prefix + "rollups/indexes/OURS2\tCOLLECTION\tgroup;windows.hour.bucket;windows.hour.count;__name__\tASCENDING;ASCENDING;DESCENDING;DESCENDING",
		prefix + "rollups/indexes/OURS3\tCOLLECTION\tgroup;windows.day.bucket;windows.day.count;__name__\tASCENDING;ASCENDING;DESCENDING;DESCENDING",
		prefix + "rollups/indexes/OURS4\tCOLLECTION\tgroup;windows.month.bucket;windows.month.count;__name__\tASCENDING;ASCENDING;DESCENDING;DESCENDING",
		prefix + "posts/indexes/APP1\tCOLLECTION\tgroup;count;__name__\tASCENDING;DESCENDING;DESCENDING",
		prefix + "rollups/indexes/APP2\tCOLLECTION\tgroup;count;__name__\tASCENDING;ASCENDING;ASCENDING",
		prefix + "rollups/indexes/APP3\tCOLLECTION_GROUP\tgroup;count;__name__\tASCENDING;DESCENDING;DESCENDING",
		prefix + "rollups/indexes/APP4\tCOLLECTION\tgroup;count;owner;__name__\tASCENDING;DESCENDING;ASCENDING;ASCENDING",
	}, "\n")
	deleted := removeWithListing(t, "firestore indexes composite list", listing, "firestore indexes composite delete ")
	if want := []string{"OURS1", "OURS2", "OURS3", "OURS4"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted the indexes %v, want %v", deleted, want)
	}
}

// TestRemoveDeletesOnlyItsOwnAlertPolicies: a real --remove (against a gcloud that lists the
// policies labelled counters_alert, with their label) deletes those labelled with one of its keys,
// and none of a prefixed Terraform deployment's in the same project (labelled PREFIXKEY).
func TestRemoveDeletesOnlyItsOwnAlertPolicies(t *testing.T) {
	requireBash(t)
	const prefix = "projects/p/alertPolicies/"
	listing := strings.Join([]string{prefix + "OURS1	increment_5xx", prefix + "STAGING1	staging-increment_5xx",
		prefix + "OURS2	sweep_absent", prefix + "STAGING2	staging-sweep_absent", prefix + "OTHER	something_else"}, "\n")
	deleted := removeWithListing(t, "alpha monitoring policies list", listing, "alpha monitoring policies delete "+prefix)
	if want := []string{"OURS1", "OURS2"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted the alert policies %v, want %v", deleted, want)
	}
}

// TestRemoveRestoresOnlyAnAppsOwnRules: --remove --replace-rules takes the app's own rules, and
// refuses a file that still holds the counters' block, before anything runs.
func TestRemoveRestoresOnlyAnAppsOwnRules(t *testing.T) {
	requireBash(t)
	if _, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--remove", "--replace-rules", filepath.Join(root, "firestore.rules")); err == nil ||
		!strings.Contains(err.Error(), "still holds the counters' block") {
		t.Errorf("--remove --replace-rules firestore.rules: %v; want it refused", err)
	}
	commands, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--remove", "--replace-rules", filepath.Join(root, "web", "test", "notes-app.rules"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(commands, func(words []string) bool {
		return words[0] == "curl" && strings.HasSuffix(words[len(words)-1], "/v1/projects/p/rulesets")
	}) {
		t.Error("--remove --replace-rules APP_RULES: no ruleset created from the app's rules")
	}
}
