package functions_test

import (
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/google/uuid"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/functions/config"
)

// TestDistinctMembersOverHTTP: a distinct counter counts each member once however often it is sent
// at once, all time and in its day bucket; wrong requests are 400s naming the field.
func TestDistinctMembersOverHTTP(t *testing.T) {
	srv := newTestServer(t, config.Default())
	a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "visitors", "distinct": true, "windows": []string{"day"}})
	if a.status != http.StatusCreated || a.body["distinct"] != true {
		t.Fatalf("configure: %d %s", a.status, a.raw)
	}
	var wg sync.WaitGroup
	for _, m := range []string{"ann", "bob", "cy"} {
		for range 8 {
			wg.Go(func() {
				if a := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "visitors", "member": m}); a.status != http.StatusOK {
					t.Errorf("member %s: %d %s", m, a.status, a.raw)
				}
			})
		}
	}
	wg.Wait()
	if got := srv.count(t, "visitors"); got != 3 {
		t.Errorf("visitors = %d, want 3 members", got)
	}
	if d := srv.countWindow(t, "visitors", "day", ""); d.body["count"] != 3.0 {
		t.Errorf("today: %s, want 3", d.raw)
	}
	again := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "visitors", "member": "ann"})
	if again.status != http.StatusOK || again.body["counted"] != false || again.body["shard"] != -1.0 {
		t.Errorf("a known member: %d %s, want 200 counted false shard -1", again.status, again.raw)
	}
	srv.increment(t, "plain", 1)
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"a delta to a distinct counter", map[string]any{"counter": "visitors", "delta": 1}, "member"},
		{"a member with delta 2", map[string]any{"counter": "visitors", "member": "ann", "delta": 2}, "delta"},
		{"an empty member", map[string]any{"counter": "visitors", "member": ""}, "member"},
		{"a member of a plain counter", map[string]any{"counter": "plain", "member": "ann"}, "member"},
		{"a member as a number", map[string]any{"counter": "visitors", "member": 7}, "member"},
	} {
		if a := srv.postJSON(t, http.MethodPost, "/Increment", c.body); a.status != http.StatusBadRequest || a.body["field"] != c.field {
			t.Errorf("%s: %d %s, want 400 on %s", c.name, a.status, a.raw, c.field)
		}
	}
	if bad := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "visitors", "distinct": "yes"}); bad.status != http.StatusBadRequest || bad.body["field"] != "distinct" {
		t.Errorf("distinct as a string: %d %s, want 400 on distinct", bad.status, bad.raw)
	}
	if got := srv.count(t, "visitors"); got != 3 {
		t.Errorf("visitors = %d after refused requests, want 3", got)
	}
}

// TestDistinctMemberIsTheVerifiedCaller: with verified callers, a plain {"counter"} counts the caller
// once, and a member other than the caller is refused.
func TestDistinctMemberIsTheVerifiedCaller(t *testing.T) {
	srv := newCallerServer(t, callerauth.Requirements{IDToken: true}, 0)
	if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "readers", "distinct": true}); a.status != http.StatusCreated {
		t.Fatalf("configure: %d %s", a.status, a.raw)
	}
	ann, uid := authEmulatorUser(t, "ann.reads@example.com")
	bob, _ := authEmulatorUser(t, "bob.reads@example.com")
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	for _, step := range []struct {
		token, body string
		counted     bool
	}{{ann, `{"counter":"readers"}`, true}, {ann, `{"counter":"readers"}`, false}, {ann, `{"counter":"readers","member":"` + uid + `"}`, false}, {bob, `{"counter":"readers"}`, true}} {
		if a := srv.incrementAs(t, as(step.token), step.body); a.status != http.StatusOK || a.body["counted"] != step.counted {
			t.Errorf("%s: %d %s, want counted %v", step.body, a.status, a.raw, step.counted)
		}
	}
	if a := srv.incrementAs(t, as(bob), `{"counter":"readers","member":"someone-else"}`); a.status != http.StatusBadRequest || a.body["field"] != "member" {
		t.Errorf("another member than the caller: %d %s, want 400 on member", a.status, a.raw)
	}
	if got := srv.count(t, "readers"); got != 2 {
		t.Errorf("readers = %d, want 2 callers", got)
	}
}

// TestKeyedMemberResendIsAReplay: a member increment sent again with its Idempotency-Key (its first
// answer was lost) gets the first answer again, marked replayed, and counts nothing; the key with
// another member is a 422.
func TestKeyedMemberResendIsAReplay(t *testing.T) {
	srv := newTestServer(t, config.Default())
	if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "visitors", "distinct": true}); a.status != http.StatusCreated {
		t.Fatalf("configure: %d %s", a.status, a.raw)
	}
	key := uuid.NewString()
	first := srv.postKeyed(t, `{"counter":"visitors","member":"ann"}`, key)
	if first.status != http.StatusOK || first.body["counted"] != true {
		t.Fatalf("first: %d %s, want 200 counted", first.status, first.raw)
	}
	again := srv.postKeyed(t, `{"counter":"visitors","member":"ann"}`, key)
	if again.status != http.StatusOK || again.header.Get("Idempotent-Replayed") != "true" || again.body["counted"] != true ||
		again.raw != first.raw {
		t.Errorf("resend: %d %v %s; want the first answer %s (counted), replayed",
			again.status, again.header.Get("Idempotent-Replayed"), again.raw, first.raw)
	}
	if other := srv.postKeyed(t, `{"counter":"visitors","member":"bob"}`, key); other.status != http.StatusUnprocessableEntity {
		t.Errorf("the key with another member: %d %s, want 422", other.status, other.raw)
	}
	if got := srv.count(t, "visitors"); got != 1 {
		t.Errorf("visitors = %d, want 1 (ann)", got)
	}
}

// TestAppCheckAloneCountsTheMembersAppsSend: under App Check without ID tokens the caller is the
// app, not the visitor, so a distinct counter counts the members the app sends (within 1..MAX_MEMBER_BYTES
// bytes); an app that leaves the member out is told to send one instead of being counted as one.
func TestAppCheckAloneCountsTheMembersAppsSend(t *testing.T) {
	iss := newAppCheckIssuer(t)
	srv := newCallerServer(t, callerauth.Requirements{AppCheck: true}, 0)
	if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "visitors", "distinct": true}); a.status != http.StatusCreated {
		t.Fatalf("configure: %d %s", a.status, a.raw)
	}
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	token := iss.token(t, jwt.MapClaims{"iss": "https://firebaseappcheck.googleapis.com/123456789", "sub": "1:123456789:web:abc",
		"aud": []string{"projects/" + project}, "iat": time.Now().Add(-time.Minute).Unix(), "exp": time.Now().Add(time.Hour).Unix()}, iss.key)
	app := map[string]string{"X-Firebase-AppCheck": token}
	for _, step := range []struct {
		member  string
		counted bool
	}{{"visitor-1", true}, {"visitor-2", true}, {"visitor-1", false}} {
		body := `{"counter":"visitors","member":"` + step.member + `"}`
		if a := srv.incrementAs(t, app, body); a.status != http.StatusOK || a.body["counted"] != step.counted {
			t.Errorf("%s: %d %s, want 200 counted %v", step.member, a.status, a.raw, step.counted)
		}
	}
	for name, body := range map[string]string{
		"no member":         `{"counter":"visitors"}`,
		"a member too long": `{"counter":"visitors","member":"` + strings.Repeat("x", 257) + `"}`,
	} {
		if a := srv.incrementAs(t, app, body); a.status != http.StatusBadRequest || a.body["field"] != "member" {
			t.Errorf("%s: %d %s, want 400 on member", name, a.status, a.raw)
		}
	}
	if a := srv.incrementAs(t, nil, `{"counter":"visitors","member":"visitor-3"}`); a.status != http.StatusForbidden {
		t.Errorf("a member without an App Check token: %d %s, want 403", a.status, a.raw)
	}
	if got := srv.count(t, "visitors"); got != 2 {
		t.Errorf("visitors = %d, want 2 visitors", got)
	}
}

// TestMemberLengthIsASetting: a member of MAX_MEMBER_BYTES (256 by default) is counted; one byte
// more is a 400 on member that counts nothing; a deployment that sets MAX_MEMBER_BYTES=1000 counts
// members of 1,000 bytes.
func TestMemberLengthIsASetting(t *testing.T) {
	cfg := config.Default()
	if cfg.MaxMemberBytes != 256 {
		t.Errorf("MAX_MEMBER_BYTES defaults to %d, want 256", cfg.MaxMemberBytes)
	}
	srv := newTestServer(t, cfg)
	if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "emails", "distinct": true}); a.status != http.StatusCreated {
		t.Fatalf("configure: %d %s", a.status, a.raw)
	}
	if a := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "emails", "member": strings.Repeat("a", 256)}); a.status != http.StatusOK || a.body["counted"] != true {
		t.Errorf("a member of 256 bytes: %d %s, want 200 counted", a.status, a.raw)
	}
	long := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "emails", "member": strings.Repeat("い", 86)}) // 258 bytes
	if long.status != http.StatusBadRequest || long.body["field"] != "member" || !strings.Contains(long.body["error"].(string), "at most 256") {
		t.Errorf("a member of 258 bytes: %d %s, want 400 on member saying at most 256", long.status, long.raw)
	}
	if got := srv.count(t, "emails"); got != 1 {
		t.Errorf("emails = %d, want 1", got)
	}
	cfg.MaxMemberBytes = 1000
	wide := newTestServer(t, cfg)
	if a := wide.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "emails", "distinct": true}); a.status != http.StatusCreated {
		t.Fatalf("configure: %d %s", a.status, a.raw)
	}
	if a := wide.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "emails", "member": strings.Repeat("b", 1000)}); a.status != http.StatusOK {
		t.Errorf("a member of 1000 bytes with MAX_MEMBER_BYTES=1000: %d %s, want 200", a.status, a.raw)
	}
}

// TestResetAndDeleteAnswerTheMembersTheyPurged: a reset of a distinct counter deletes the member
// documents of the epoch it ends, a delete those left, and purge_members answers what is left.
func TestResetAndDeleteAnswerTheMembersTheyPurged(t *testing.T) {
	srv := newTestServer(t, config.Default())
	if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "voters", "distinct": true, "windows": []string{"day"}}); a.status != http.StatusCreated {
		t.Fatalf("configure: %d %s", a.status, a.raw)
	}
	for _, m := range []string{"ann", "bob", "cy"} {
		if a := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "voters", "member": m}); a.status != http.StatusOK {
			t.Fatalf("member %s: %d %s", m, a.status, a.raw)
		}
	}
	reset := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "voters", "reset": true})
	if reset.status != http.StatusOK || reset.body["members_deleted"] != 6.0 || reset.body["members_left"] != false {
		t.Errorf("reset: %d %s, want 200 with 6 member documents deleted (3 members, all time and day) and none left", reset.status, reset.raw)
	}
	if a := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "voters", "member": "ann"}); a.status != http.StatusOK || a.body["counted"] != true {
		t.Fatalf("ann after the reset: %d %s, want counted", a.status, a.raw)
	}
	del := srv.do(t, http.MethodDelete, "/ConfigureCounter?counter=voters", "", nil)
	if del.status != http.StatusOK || del.body["members_deleted"] != 2.0 || del.body["members_left"] != false {
		t.Errorf("delete: %d %s, want 200 with 2 member documents deleted and none left", del.status, del.raw)
	}
	purge := srv.postJSON(t, http.MethodPost, "/ConfigureCounter", map[string]any{"counter": "voters", "purge_members": true})
	if purge.status != http.StatusOK || purge.body["members_deleted"] != 0.0 || purge.body["members_left"] != false {
		t.Errorf("purge_members: %d %s, want 200, nothing deleted and none left", purge.status, purge.raw)
	}
}
