package functions_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/appcheck"
	"firebase.google.com/go/v4/auth"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/uuid"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared/wire"
)

// authEmulatorUser signs a new email user up with the Firebase Auth emulator that the local stack
// runs (the real issuer of ID tokens there) and returns their ID token and user ID. The address gets
// a random tag, so each call is a new user however often the tests run against one emulator.
func authEmulatorUser(t *testing.T, email string) (idToken, uid string) {
	t.Helper()
	email = strings.Replace(email, "@", "+"+strings.ToLower(rand.Text()[:12])+"@", 1)
	return authEmulatorSignUp(t, map[string]any{"email": email, "password": "secret-123", "returnSecureToken": true})
}

// authEmulatorAnonymous signs a new anonymous user in, as signInAnonymously does.
func authEmulatorAnonymous(t *testing.T) (idToken, uid string) {
	t.Helper()
	return authEmulatorSignUp(t, map[string]any{"returnSecureToken": true})
}

// authEmulatorSignUp calls the Auth emulator's accounts:signUp with request.
func authEmulatorSignUp(t *testing.T, request map[string]any) (idToken, uid string) {
	t.Helper()
	return authEmulatorAuth(t, "accounts:signUp", request)
}

// authEmulatorAuth calls the Auth emulator's method (accounts:signUp, accounts:signInWithPassword)
// with request and returns the ID token and user ID it answers.
func authEmulatorAuth(t *testing.T, method string, request map[string]any) (idToken, uid string) {
	t.Helper()
	testenv.SkipIfShort(t, "the Auth emulator")
	host := os.Getenv(emulators.AuthHostEnv)
	if host == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, which starts the Auth emulator", emulators.AuthHostEnv)
	}
	body, _ := json.Marshal(request)
	resp, err := http.Post("http://"+host+"/identitytoolkit.googleapis.com/v1/"+method+"?key=local", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s %v: %v", method, request, err)
	}
	defer resp.Body.Close()
	var out struct{ IDToken, LocalID string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.IDToken == "" {
		t.Fatalf("%s %v: HTTP %d, %v", method, request, resp.StatusCode, err)
	}
	return out.IDToken, out.LocalID
}

// newCallerServer is a test server whose Increment requires what req says, verified by the real
// verifier for the stack's project.
func newCallerServer(t *testing.T, req callerauth.Requirements, perCallerLimit int64) *testServer {
	t.Helper()
	cfg := config.Default()
	cfg.RequireIDToken, cfg.RequireAppCheck, cfg.PerCallerLimit = req.IDToken, req.AppCheck, perCallerLimit
	cfg.RefuseAnonymousUsers = req.RefuseAnonymous
	srv := newTestServer(t, cfg)
	v, err := callerauth.New(context.Background(), os.Getenv("GOOGLE_CLOUD_PROJECT"), req)
	if err != nil {
		t.Fatal(err)
	}
	srv.svc.RequireCallers(v)
	return srv
}

// incrementAs posts an increment with the given extra headers.
func (s *testServer) incrementAs(t *testing.T, headers map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/Increment", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return s.send(t, req)
}

// unsignedToken is a token shaped like the Auth emulator's (alg none) with the given claims.
func unsignedToken(claims map[string]any) string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + "."
}

// TestIncrementRequiresAVerifiedIDToken: with REQUIRE_ID_TOKEN, a token from the Auth emulator counts;
// no token, a malformed header, a token for another project or an expired one get 401 with the field
// and WWW-Authenticate (invalid_request for a malformed header, invalid_token for the rest, as
// docs/api.md says), and change nothing.
func TestIncrementRequiresAVerifiedIDToken(t *testing.T) {
	srv := newCallerServer(t, callerauth.Requirements{IDToken: true}, 0)
	token, uid := authEmulatorUser(t, "ann@example.com")
	if a := srv.incrementAs(t, map[string]string{"Authorization": "Bearer " + token}, `{"counter":"posts"}`); a.status != http.StatusOK {
		t.Fatalf("increment with a valid ID token: %d %s", a.status, a.raw)
	}
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	now := time.Now().Unix()
	claims := func(aud string, iat, exp int64) map[string]any {
		return map[string]any{"aud": aud, "iss": "https://securetoken.google.com/" + aud, "sub": uid, "user_id": uid,
			"iat": iat, "exp": exp, "auth_time": iat}
	}
	refused := map[string]map[string]string{
		"no token":          {},
		"not bearer":        {"Authorization": "Basic " + token},
		"empty bearer":      {"Authorization": "Bearer "},
		"garbage":           {"Authorization": "Bearer not-a-jwt"},
		"another project":   {"Authorization": "Bearer " + unsignedToken(claims("demo-someone-else", now, now+3600))},
		"expired":           {"Authorization": "Bearer " + unsignedToken(claims(project, now-7200, now-3600))},
		"app check instead": {"X-Firebase-AppCheck": token},
	}
	messages := map[any]bool{}
	for name, headers := range refused {
		a := srv.incrementAs(t, headers, `{"counter":"posts"}`)
		challenge := `Bearer error="invalid_token"` // docs/api.md, "Verified callers"
		if name == "not bearer" || name == "empty bearer" {
			challenge = `Bearer error="invalid_request"`
		}
		if a.status != http.StatusUnauthorized || a.body["field"] != "Authorization" || a.body["error"] == "" ||
			a.header.Get("WWW-Authenticate") != challenge {
			t.Errorf("%s: %d %s (WWW-Authenticate %q), want 401 with field Authorization and WWW-Authenticate %s",
				name, a.status, a.raw, a.header.Get("WWW-Authenticate"), challenge)
		}
		if name != "not bearer" && name != "empty bearer" { // a malformed header has its own fixed text
			messages[a.body["error"]] = true
		}
	}
	if len(messages) != 1 { // the verifier's own text (claims, expected values) stays in the logs
		t.Errorf("refused tokens got %d different texts, want one fixed text: %v", len(messages), messages)
	}
	if got := srv.count(t, "posts"); got != 1 {
		t.Errorf("posts = %d, want 1: refused requests must change nothing", got)
	}
}

// TestIdempotencyKeysAreScopedToTheVerifiedUser: bob sending ann's key with her very request gets a
// fresh increment of his own, not her answer (shard, received_at), and each retry replays only its
// sender's first answer. Short keys are allowed: the scope is the user.
func TestIdempotencyKeysAreScopedToTheVerifiedUser(t *testing.T) {
	srv := newCallerServer(t, callerauth.Requirements{IDToken: true}, 0)
	ann, _ := authEmulatorUser(t, "ann.keys@example.com")
	bob, _ := authEmulatorUser(t, "bob.keys@example.com")
	send := func(token string, delta int) answer {
		return srv.incrementAs(t, map[string]string{"Authorization": "Bearer " + token, "Idempotency-Key": "order-1"},
			fmt.Sprintf(`{"counter":"orders","delta":%d}`, delta))
	}
	annFirst := send(ann, 2)
	if annFirst.status != http.StatusOK || annFirst.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("ann's first: %d %s", annFirst.status, annFirst.raw)
	}
	annAnswered := time.Now()
	bobFirst := send(bob, 2)
	if bobFirst.status != http.StatusOK || bobFirst.header.Get("Idempotent-Replayed") != "" || !receivedAt(t, bobFirst).After(annAnswered) {
		t.Fatalf("bob sending ann's key and request: %d %s (ann's: %s); want a fresh answer received after hers", bobFirst.status, bobFirst.raw, annFirst.raw)
	}
	for _, c := range []struct {
		name  string
		token string
		first answer
	}{{"ann", ann, annFirst}, {"bob", bob, bobFirst}} {
		if a := send(c.token, 2); a.status != http.StatusOK || a.header.Get("Idempotent-Replayed") != "true" || a.raw != c.first.raw {
			t.Errorf("%s's retry: %d %s; want %s's own first answer %s replayed", c.name, a.status, a.raw, c.name, c.first.raw)
		}
	}
	if a := send(ann, 3); a.status != http.StatusUnprocessableEntity || !strings.Contains(a.raw, `to add 2 to counter \"orders\"`) {
		t.Errorf("ann's key with another delta: %d %s; want 422 telling her own first use", a.status, a.raw)
	}
	if got := srv.count(t, "orders"); got != 4 {
		t.Errorf("orders = %d, want 4 (ann 2 + bob 2, retries not counted)", got)
	}
}

// TestOneLikePerUser: with PER_CALLER_LIMIT=1 a user's second like is answered counted:false and not
// counted, an unlike takes it back, and another user's like counts.
func TestOneLikePerUser(t *testing.T) {
	srv := newCallerServer(t, callerauth.Requirements{IDToken: true}, 1)
	ann, _ := authEmulatorUser(t, "ann.likes@example.com")
	bob, _ := authEmulatorUser(t, "bob.likes@example.com")
	steps := []struct {
		token   string
		delta   int
		counted bool
	}{{ann, 1, true}, {ann, 1, false}, {bob, 1, true}, {ann, -1, true}, {ann, -1, false}}
	for i, st := range steps {
		a := srv.incrementAs(t, map[string]string{"Authorization": "Bearer " + st.token}, fmt.Sprintf(`{"counter":"photo","delta":%d}`, st.delta))
		if a.status != http.StatusOK || a.body["counted"] != st.counted {
			t.Errorf("step %d: %d %s, want 200 counted %v", i, a.status, a.raw, st.counted)
		}
	}
	if got := srv.count(t, "photo"); got != 1 {
		t.Errorf("photo = %d, want 1 (bob's like; ann liked and unliked)", got)
	}
}

// appCheckIssuer signs App Check tokens with a test key and serves its public key as JWKS, as
// Firebase App Check does; the Admin SDK's verifier fetches the keys from it.
type appCheckIssuer struct {
	key *rsa.PrivateKey
	kid string
}

func newAppCheckIssuer(t *testing.T) *appCheckIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &appCheckIssuer{key: key, kid: "test-key-1"}
	jwks := map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": iss.kid,
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
	}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jwks)
	}))
	t.Cleanup(srv.Close)
	saved := appcheck.JWKSUrl
	appcheck.JWKSUrl = srv.URL
	t.Cleanup(func() { appcheck.JWKSUrl = saved })
	return iss
}

// token signs claims with key (the issuer's own key unless another is given).
func (iss *appCheckIssuer) token(t *testing.T, claims jwt.MapClaims, key *rsa.PrivateKey) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = iss.kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// appCheckClaims are an App Check token's claims for aud, expiring at exp; each call's token is new (jti).
func appCheckClaims(aud any, exp time.Time) jwt.MapClaims {
	return jwt.MapClaims{"iss": "https://firebaseappcheck.googleapis.com/123456789", "sub": "1:123456789:web:abc",
		"aud": aud, "iat": time.Now().Add(-time.Minute).Unix(), "exp": exp.Unix(), "jti": rand.Text()}
}

// validToken is a new App Check token for project, valid for an hour.
func (iss *appCheckIssuer) validToken(t *testing.T, project string) string {
	t.Helper()
	return iss.token(t, appCheckClaims([]string{"projects/123456789", "projects/" + project}, time.Now().Add(time.Hour)), iss.key)
}

// appCheckAPI stands in for the App Check API's verifyAppCheckToken (there is no emulator of it): it
// consumes the tokens it is sent, answering alreadyConsumed as the API does; while down, it answers
// 503. A request unlike the Admin SDK's (path, method, body) gets 400.
type appCheckAPI struct {
	*httptest.Server
	mu       sync.Mutex
	consumed map[string]bool
	down     bool
}

func newAppCheckAPI(t *testing.T, project string) *appCheckAPI {
	t.Helper()
	api := &appCheckAPI{consumed: map[string]bool{}}
	api.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Token string `json:"app_check_token"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1beta/projects/"+project+":verifyAppCheckToken" ||
			json.NewDecoder(r.Body).Decode(&body) != nil || body.Token == "" {
			http.Error(w, `{"error":{"status":"INVALID_ARGUMENT"}}`, http.StatusBadRequest)
			return
		}
		api.mu.Lock()
		defer api.mu.Unlock()
		if api.down {
			http.Error(w, `{"error":{"status":"UNAVAILABLE"}}`, http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]bool{"alreadyConsumed": api.consumed[body.Token]})
		api.consumed[body.Token] = true
	}))
	t.Cleanup(api.Close)
	return api
}

// TestReplayedAppCheckTokensCountOnce: with APP_CHECK_REPLAY_PROTECTION, Increment consumes each App
// Check token through the App Check API: a token counts once, its replay gets 403 (field
// X-Firebase-AppCheck) and counts nothing, and an outage of the API is a 503 not_applied that counts
// nothing.
func TestReplayedAppCheckTokensCountOnce(t *testing.T) {
	iss := newAppCheckIssuer(t)
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	api := newAppCheckAPI(t, project)
	srv := newCallerServer(t, callerauth.Requirements{AppCheck: true, ConsumeAppCheck: true, AppCheckAPI: api.URL}, 0)
	increment := func(token string) answer {
		return srv.incrementAs(t, map[string]string{"X-Firebase-AppCheck": token}, `{"counter":"once"}`)
	}
	token := iss.validToken(t, project)
	if a := increment(token); a.status != http.StatusOK {
		t.Fatalf("first use of a token: %d %s, want 200", a.status, a.raw)
	}
	if a := increment(token); a.status != http.StatusForbidden || a.body["field"] != "X-Firebase-AppCheck" {
		t.Errorf("replayed token: %d %s, want 403 with field X-Firebase-AppCheck", a.status, a.raw)
	}
	if a := increment(iss.validToken(t, project)); a.status != http.StatusOK {
		t.Errorf("a new token: %d %s, want 200", a.status, a.raw)
	}
	api.mu.Lock()
	api.down = true
	api.mu.Unlock()
	if a := increment(iss.validToken(t, project)); a.status != http.StatusServiceUnavailable || a.body["outcome"] != "not_applied" {
		t.Errorf("App Check API down: %d %s, want 503 not_applied", a.status, a.raw)
	}
	if got := srv.count(t, "once"); got != 2 {
		t.Errorf("once = %d, want 2: a replayed token, or one the API could not consume, must count nothing", got)
	}
}

// TestIncrementRequiresAnAppCheckToken: with REQUIRE_APP_CHECK, a token signed by the App Check key
// for this project counts, whatever Authorization header comes with it (ID tokens are not required); none, another key's, another project's, an expired one, an unsigned one
// or one with malformed claims get 403 with the field, and change nothing (and nothing panics).
func TestIncrementRequiresAnAppCheckToken(t *testing.T) {
	iss := newAppCheckIssuer(t)
	srv := newCallerServer(t, callerauth.Requirements{AppCheck: true}, 0)
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	now := time.Now()
	valid := iss.validToken(t, project)
	if a := srv.incrementAs(t, map[string]string{"X-Firebase-AppCheck": valid}, `{"counter":"views"}`); a.status != http.StatusOK {
		t.Fatalf("increment with a valid App Check token: %d %s", a.status, a.raw)
	}
	// ID tokens are not required, so the Authorization header is not the function's business.
	if a := srv.incrementAs(t, map[string]string{"X-Firebase-AppCheck": valid, "Authorization": "Basic dXNlcjpwYXNz"},
		`{"counter":"views"}`); a.status != http.StatusOK {
		t.Fatalf("increment with a valid App Check token and an Authorization header of another scheme: %d %s (WWW-Authenticate %q)",
			a.status, a.raw, a.header.Get("WWW-Authenticate"))
	}
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{
		"no token":        "",
		"another key":     iss.token(t, appCheckClaims([]string{"projects/" + project}, now.Add(time.Hour)), otherKey),
		"another project": iss.token(t, appCheckClaims([]string{"projects/demo-someone-else"}, now.Add(time.Hour)), iss.key),
		"expired":         iss.token(t, appCheckClaims([]string{"projects/" + project}, now.Add(-time.Minute)), iss.key),
		"unsigned":        unsignedToken(map[string]any{"aud": []string{"projects/" + project}, "sub": "x", "exp": now.Add(time.Hour).Unix()}),
		"malformed aud":   iss.token(t, appCheckClaims("projects/"+project, now.Add(time.Hour)), iss.key),
	}
	messages := map[any]bool{}
	for name, token := range refused {
		a := srv.incrementAs(t, map[string]string{"X-Firebase-AppCheck": token}, `{"counter":"views"}`)
		if a.status != http.StatusForbidden || a.body["field"] != "X-Firebase-AppCheck" || a.body["error"] == "" {
			t.Errorf("%s: %d %s, want 403 with field X-Firebase-AppCheck", name, a.status, a.raw)
		}
		messages[a.body["error"]] = true
	}
	if len(messages) != 1 {
		t.Errorf("refused tokens got %d different texts, want one fixed text: %v", len(messages), messages)
	}
	if got := srv.count(t, "views"); got != 2 {
		t.Errorf("views = %d, want 2: refused requests must change nothing", got)
	}
}

// TestAppCheckAloneKeysAreSecrets: with App Check alone every install is one caller, so a key is a
// bearer secret: a short one is refused and writes nothing, and a spent one's 422 does not tell what
// it was spent on.
func TestAppCheckAloneKeysAreSecrets(t *testing.T) {
	iss := newAppCheckIssuer(t)
	srv := newCallerServer(t, callerauth.Requirements{AppCheck: true}, 0)
	token := iss.validToken(t, os.Getenv("GOOGLE_CLOUD_PROJECT"))
	send := func(key, body string) answer {
		return srv.incrementAs(t, map[string]string{"X-Firebase-AppCheck": token, wire.HeaderIdempotencyKey: key}, body)
	}
	if a := send("order-1", `{"counter":"orders"}`); a.status != http.StatusBadRequest || a.body["field"] != wire.HeaderIdempotencyKey {
		t.Errorf("a short key: %d %s, want 400 naming %s", a.status, a.raw, wire.HeaderIdempotencyKey)
	}
	if paths := testenv.DocumentPaths(t, srv.client); len(paths) != 0 {
		t.Errorf("a short key wrote %v", paths)
	}
	key := uuid.NewString()
	if a := send(key, `{"counter":"orders","delta":2}`); a.status != http.StatusOK {
		t.Fatalf("a random key: %d %s", a.status, a.raw)
	}
	if a := send(key, `{"counter":"orders","delta":3}`); a.status != http.StatusUnprocessableEntity || strings.Contains(a.raw, "orders") {
		t.Errorf("the key with another delta: %d %s; want 422 not naming its first use", a.status, a.raw)
	}
}

// productionCallerServer is a test server whose Increment requires ID tokens verified as in
// production (not by the Auth emulator's rules). With keysUnreachable, Google's public keys cannot be
// fetched (every connection of the verifier's transport fails).
func productionCallerServer(t *testing.T, keysUnreachable bool) *testServer {
	t.Helper()
	cfg := config.Default()
	cfg.RequireIDToken = true
	srv := newTestServer(t, cfg)
	testenv.OutsideEmulatorMode(t, os.Getenv("GOOGLE_CLOUD_PROJECT"))
	if keysUnreachable { // the SDK clones http.DefaultTransport when the verifier is made
		saved := http.DefaultTransport
		http.DefaultTransport = &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("network unreachable (test)")
		}}
		defer func() { http.DefaultTransport = saved }()
	}
	v, err := callerauth.New(context.Background(), os.Getenv("GOOGLE_CLOUD_PROJECT"), callerauth.Requirements{IDToken: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.svc.RequireCallers(v)
	return srv
}

// TestUnsignedIDTokensAreRefusedInProduction: outside emulator mode, an ID token the Auth emulator
// issues (alg none, unsigned), one of the emulator with a made-up kid, and one forged with a guessed
// HS256 secret are refused with 401 and count nothing, whatever user they name.
func TestUnsignedIDTokensAreRefusedInProduction(t *testing.T) {
	emulated, uid := authEmulatorUser(t, "eve@example.com")
	srv := productionCallerServer(t, false)
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	now := time.Now().Unix()
	claims := map[string]any{"aud": project, "iss": "https://securetoken.google.com/" + project, "sub": uid, "user_id": uid,
		"iat": now, "exp": now + 3600, "auth_time": now}
	hs256 := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(claims))
	hs256.Header["kid"] = "k1"
	guessed, err := hs256.SignedString([]byte("guessed"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(unsignedToken(claims), ".")
	forged := map[string]string{
		"the Auth emulator's own token": emulated,
		"alg none":                      unsignedToken(claims),
		"alg none with a kid":           base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"k1"}`)) + "." + rest,
		"HS256 with a guessed secret":   guessed,
	}
	for name, token := range forged {
		if a := srv.incrementAs(t, map[string]string{"Authorization": "Bearer " + token}, `{"counter":"forged"}`); a.status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", name, a.status, a.raw)
		}
	}
	if paths := testenv.DocumentPaths(t, srv.client); len(paths) != 0 {
		t.Errorf("refused tokens wrote %v", paths)
	}
}

// TestTokenVerificationFailuresOfThePlatformAre503: when Google's public keys cannot be fetched, a
// well-formed ID token gets 503 with Retry-After, outcome not_applied and a fixed text (no transport
// details), and nothing is counted; the failures are logged sampled, not one line each.
func TestTokenVerificationFailuresOfThePlatformAre503(t *testing.T) {
	srv := productionCallerServer(t, true)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	now := time.Now().Unix()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"aud": project, "iss": "https://securetoken.google.com/" + project,
		"sub": "ann", "iat": now, "exp": now + 3600, "auth_time": now})
	tok.Header["kid"] = "k1"
	signed, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	const requests = 20
	var a answer
	for range requests {
		a = srv.incrementAs(t, map[string]string{"Authorization": "Bearer " + signed}, `{"counter":"unverified"}`)
	}
	warnings := 0
	for _, line := range testenv.JSONLines(t, srv.logs.String()) {
		if line["message"] == "caller's token could not be verified" {
			warnings++
		}
	}
	if warnings == 0 || warnings > 5 {
		t.Errorf("%d requests logged %d lines of their own, want 1 to 5 (sampled)", requests, warnings)
	}
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || a.body["outcome"] != "not_applied" {
		t.Errorf("%d %s (Retry-After %q); want 503, Retry-After, outcome not_applied", a.status, a.raw, a.header.Get("Retry-After"))
	}
	if strings.Contains(a.raw, "unreachable") || strings.Contains(a.raw, "googleapis") {
		t.Errorf("the answer %s tells internal details", a.raw)
	}
	if paths := testenv.DocumentPaths(t, srv.client); len(paths) != 0 {
		t.Errorf("an unverified request wrote %v", paths)
	}
}

// TestAnonymousUsersRefusedWhenAsked: with REFUSE_ANONYMOUS_USERS an anonymous user's ID token gets
// 403 (field Authorization) and counts nothing, while a user with an account counts; without it the
// anonymous user counts too.
func TestAnonymousUsersRefusedWhenAsked(t *testing.T) {
	anonymous, _ := authEmulatorAnonymous(t)
	member, _ := authEmulatorUser(t, "member@example.com")
	strict := newCallerServer(t, callerauth.Requirements{IDToken: true, RefuseAnonymous: true}, 1)
	a := strict.incrementAs(t, map[string]string{"Authorization": "Bearer " + anonymous}, `{"counter":"photo"}`)
	if a.status != http.StatusForbidden || a.body["field"] != "Authorization" {
		t.Errorf("anonymous user: %d %s, want 403 with field Authorization", a.status, a.raw)
	}
	if a := strict.incrementAs(t, map[string]string{"Authorization": "Bearer " + member}, `{"counter":"photo"}`); a.status != http.StatusOK {
		t.Errorf("user with an account: %d %s, want 200", a.status, a.raw)
	}
	if got := strict.count(t, "photo"); got != 1 {
		t.Errorf("photo = %d, want 1 (the member's like only)", got)
	}
	lenient := newCallerServer(t, callerauth.Requirements{IDToken: true}, 1)
	if a := lenient.incrementAs(t, map[string]string{"Authorization": "Bearer " + anonymous}, `{"counter":"photo"}`); a.status != http.StatusOK {
		t.Errorf("anonymous user, not refused: %d %s, want 200", a.status, a.raw)
	}
}

// TestUnverifiedEmailsRefusedWhenAsked: with REQUIRE_VERIFIED_EMAIL, an email sign-up's ID token
// (made at will, address unverified) and an anonymous one get 403 (field Authorization) and count
// nothing; once the address is verified, the user's new token counts.
func TestUnverifiedEmailsRefusedWhenAsked(t *testing.T) {
	email := "new+" + strings.ToLower(rand.Text()[:12]) + "@example.com"
	unverified, uid := authEmulatorSignUp(t, map[string]any{"email": email, "password": "secret-123", "returnSecureToken": true})
	anonymous, _ := authEmulatorAnonymous(t)
	srv := newCallerServer(t, callerauth.Requirements{IDToken: true, VerifiedEmail: true}, 1)
	for name, token := range map[string]string{"unverified address": unverified, "anonymous": anonymous} {
		a := srv.incrementAs(t, map[string]string{"Authorization": "Bearer " + token}, `{"counter":"photo"}`)
		if a.status != http.StatusForbidden || a.body["field"] != "Authorization" || !strings.Contains(a.raw, "verified email") {
			t.Errorf("%s: %d %s, want 403 with field Authorization asking for a verified email address", name, a.status, a.raw)
		}
	}
	if paths := testenv.DocumentPaths(t, srv.client); len(paths) != 0 {
		t.Errorf("refused tokens wrote %v", paths)
	}
	app, err := firebase.NewApp(context.Background(), &firebase.Config{ProjectID: os.Getenv("GOOGLE_CLOUD_PROJECT")})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := app.Auth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UpdateUser(context.Background(), uid, (&auth.UserToUpdate{}).EmailVerified(true)); err != nil {
		t.Fatal(err)
	}
	verified, _ := authEmulatorAuth(t, "accounts:signInWithPassword", map[string]any{"email": email, "password": "secret-123", "returnSecureToken": true})
	if a := srv.incrementAs(t, map[string]string{"Authorization": "Bearer " + verified}, `{"counter":"photo"}`); a.status != http.StatusOK {
		t.Errorf("verified address: %d %s, want 200", a.status, a.raw)
	}
}

// TestRevokedIDTokensGet401: with CHECK_REVOKED_TOKENS, the ID token of a user whose sessions were
// revoked after it was issued gets 401 (field Authorization, WWW-Authenticate) saying it was revoked,
// and counts nothing. (The Auth emulator's tokens are checked against revocations whatever the
// setting: callerauth's tests show the setting's effect outside emulator mode.)
func TestRevokedIDTokensGet401(t *testing.T) {
	srv := newCallerServer(t, callerauth.Requirements{IDToken: true, CheckRevoked: true}, 0)
	token, uid := authEmulatorUser(t, "revoked@example.com")
	time.Sleep(1100 * time.Millisecond) // tokens carry seconds: revoke a second after the token's issue
	app, err := firebase.NewApp(context.Background(), &firebase.Config{ProjectID: os.Getenv("GOOGLE_CLOUD_PROJECT")})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := app.Auth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.RevokeRefreshTokens(context.Background(), uid); err != nil {
		t.Fatal(err)
	}
	a := srv.incrementAs(t, map[string]string{"Authorization": "Bearer " + token}, `{"counter":"revoked"}`)
	if a.status != http.StatusUnauthorized || a.body["field"] != "Authorization" || !strings.Contains(fmt.Sprint(a.body["error"]), "revoked") ||
		a.header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
		t.Errorf("revoked token: %d %s (WWW-Authenticate %q), want 401 with field Authorization saying it was revoked",
			a.status, a.raw, a.header.Get("WWW-Authenticate"))
	}
	if paths := testenv.DocumentPaths(t, srv.client); len(paths) != 0 {
		t.Errorf("a revoked token wrote %v", paths)
	}
}

// TestPrivateFunctionTakesTheUsersTokenBesideTheIAMToken: a backend calling a private Increment for a
// user sends its IAM token in X-Serverless-Authorization (Cloud Run checks it there) and the user's
// Firebase ID token in Authorization: the user is the verified caller. A Google-signed IAM token in
// Authorization instead gets 401 saying where each token goes.
func TestPrivateFunctionTakesTheUsersTokenBesideTheIAMToken(t *testing.T) {
	srv := newCallerServer(t, callerauth.Requirements{IDToken: true}, 1)
	user, _ := authEmulatorUser(t, "ann.backend@example.com")
	now := time.Now().Unix()
	iam := unsignedToken(map[string]any{"iss": "https://accounts.google.com", "aud": srv.URL + "/Increment",
		"email": "backend@p.iam.gserviceaccount.com", "sub": "1234567890", "iat": now, "exp": now + 3600})
	for i, counted := range []bool{true, false} { // PER_CALLER_LIMIT=1: the second like is the same user's
		a := srv.incrementAs(t, map[string]string{"X-Serverless-Authorization": "Bearer " + iam, "Authorization": "Bearer " + user}, `{"counter":"liked"}`)
		if a.status != http.StatusOK || a.body["counted"] != counted {
			t.Fatalf("like %d with the user's token beside the IAM token: %d %s, want 200 counted %v", i+1, a.status, a.raw, counted)
		}
	}
	a := srv.incrementAs(t, map[string]string{"Authorization": "Bearer " + iam}, `{"counter":"liked"}`)
	if a.status != http.StatusUnauthorized || !strings.Contains(a.raw, "X-Serverless-Authorization") {
		t.Errorf("the IAM token in Authorization: %d %s, want 401 naming X-Serverless-Authorization", a.status, a.raw)
	}
}
