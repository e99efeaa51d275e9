package clientstack_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"google.golang.org/api/option"

	"github.com/shardcount/counters/client"
	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/functionsproc"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared/wire"
)

// cloudRunFront stands for Cloud Run's IAM check in front of a private function: it admits a
// request whose X-Serverless-Authorization, or else Authorization, is "Bearer "+iamToken (403
// otherwise) and passes it on, Authorization included, to target.
func cloudRunFront(t *testing.T, target, iamToken string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		iam := r.Header.Get(wire.HeaderServerlessAuthorization)
		if iam == "" {
			iam = r.Header.Get("Authorization")
		}
		if iam != "Bearer "+iamToken {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front.URL
}

// authEmulatorIDToken signs a new anonymous user up with the stack's Auth emulator: their ID token.
func authEmulatorIDToken(t *testing.T) string {
	t.Helper()
	host := os.Getenv(emulators.AuthHostEnv)
	if host == "" {
		t.Fatalf("%s is not set: run the tests inside `bin/localstack exec --`", emulators.AuthHostEnv)
	}
	resp, err := http.Post("http://"+host+"/identitytoolkit.googleapis.com/v1/accounts:signUp?key=local", "application/json",
		bytes.NewReader([]byte(`{"returnSecureToken":true}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ IDToken string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.IDToken == "" {
		t.Fatalf("sign up: HTTP %d, %v", resp.StatusCode, err)
	}
	return out.IDToken
}

// TestBackendIncrementsAPrivateFunctionForAUser: behind an IAM check like Cloud Run's, with
// REQUIRE_ID_TOKEN and PER_CALLER_LIMIT=1, a client carrying a user's ID token
// (ContextWithIDToken) passes the check with its IAM token in X-Serverless-Authorization and is
// counted as that user (a second like is not counted); without the user's token its IAM token is
// refused by the function with a message naming X-Serverless-Authorization.
func TestBackendIncrementsAPrivateFunctionForAUser(t *testing.T) {
	testenv.FirestoreEmulatorHost(t) // skips under -short
	// The stack's own project, whose users the Auth emulator signs up.
	// A Google-signed ID token's shape (the front does not check signatures).
	claims := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"https://accounts.google.com","email":"backend@p.iam.gserviceaccount.com"}`))
	iamToken := "eyJhbGciOiJSUzI1NiJ9." + claims + ".c2ln"
	front := cloudRunFront(t, functionsproc.Start(t, "REQUIRE_ID_TOKEN=true", "PER_CALLER_LIMIT=1"), iamToken)
	c, err := client.New(context.Background(), option.WithEndpoint(front),
		client.WithIDTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: iamToken, TokenType: "Bearer"})))
	if err != nil {
		t.Fatal(err)
	}
	counter := testenv.UniqueID("liked")
	ctx := client.ContextWithIDToken(context.Background(), authEmulatorIDToken(t))
	for i, want := range []bool{true, false} {
		got, err := c.Increment(ctx, client.Increment{Counter: counter})
		if err != nil {
			t.Fatalf("like %d: %v", i+1, err)
		}
		if got.Counted == nil || *got.Counted != want {
			t.Errorf("like %d: counted %v, want %v (one like per user)", i+1, got.Counted, want)
		}
	}
	_, err = c.Increment(context.Background(), client.Increment{Counter: counter})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized || !strings.Contains(apiErr.Message, wire.HeaderServerlessAuthorization) {
		t.Errorf("without the user's token: %v, want 401 naming %s", err, wire.HeaderServerlessAuthorization)
	}
	if got, err := c.Count(context.Background(), counter); err != nil || got.Count != 1 {
		t.Errorf("Count %s: %+v, %v; want 1", counter, got, err)
	}
}
