package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/testenv"
)

// TestReadNoneClosesTheRollupsToClients: composed with a declaration of "read": "none", the rules
// loaded into the emulator deny an unauthenticated client the roll-ups of that declaration's
// counters, by get and by query, and still serve the others' roll-ups by get and by a query that
// names them. (Queries that do not name their documents are denied: rules cannot prove them clear.)
func TestReadNoneClosesTheRollupsToClients(t *testing.T) {
	host := testenv.FirestoreEmulatorHost(t)
	dir := t.TempDir()
	app := filepath.Join(dir, "firestore.rules")
	src := "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n    match /notes/{id} { allow read: if true; }\n  }\n}\n"
	if err := os.WriteFile(app, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COUNTER_SOURCES", `[
		{"documents": "shops/{shop}/orders/{order}", "counter": "revenue.{shop}", "sum": "amount", "read": "none"},
		{"documents": "posts/{post}/likes/{uid}", "counter": "likes-{post}", "read": "public"}]`)
	var stdout, stderr strings.Builder
	if code := run([]string{"-app", app}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}
	project := testenv.NewProjectID()
	if err := emulators.LoadRules(context.Background(), host, project, stdout.String()); err != nil {
		t.Fatalf("the composed rules do not load: %v\n%s", err, stdout.String())
	}
	client := testenv.FirestoreOf(t, project)
	for _, id := range []string{"revenue.s1", "likes-p1", "revenueXs1"} {
		if _, err := client.Collection("rollups").Doc(id).Set(context.Background(), map[string]any{"count": 5}); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string]int{"revenue.s1": http.StatusForbidden, "likes-p1": http.StatusOK, "revenueXs1": http.StatusOK} {
		if got := testenv.ClientGetStatus(t, project, "rollups/"+id); got != want {
			t.Errorf("client get of rollups/%s: status %d, want %d", id, got, want)
		}
	}
	if got := clientQueryStatus(t, host, project, `{"structuredQuery": {"from": [{"collectionId": "rollups"}], "limit": 10}}`); got != http.StatusForbidden {
		t.Errorf("client query of 10 roll-ups, one of them closed: status %d, want %d", got, http.StatusForbidden)
	}
	byName := `{"structuredQuery": {"from": [{"collectionId": "rollups"}], "where": {"fieldFilter": {"field": {"fieldPath": "__name__"}, "op": "EQUAL", ` +
		`"value": {"referenceValue": "projects/` + project + `/databases/(default)/documents/rollups/likes-p1"}}}, "limit": 10}}`
	if got := clientQueryStatus(t, host, project, byName); got != http.StatusOK {
		t.Errorf("client query naming an open roll-up: status %d, want %d", got, http.StatusOK)
	}
}

// clientQueryStatus runs query (a runQuery body) in project as an unauthenticated client and
// returns the HTTP status.
func clientQueryStatus(t *testing.T, host, project, query string) int {
	t.Helper()
	u := "http://" + host + "/v1/projects/" + project + "/databases/(default)/documents:runQuery"
	resp, err := http.Post(u, "application/json", strings.NewReader(query))
	if err != nil {
		t.Fatalf("client query: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
