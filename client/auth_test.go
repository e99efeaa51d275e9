package client_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"google.golang.org/api/option"

	"github.com/shardcount/counters/client"
)

// headersSeen serves 200 increments and records each request's Authorization and
// X-Serverless-Authorization.
func headersSeen(t *testing.T) (url string, seen func() [][2]string) {
	t.Helper()
	return headersSeenOn(t, httptest.NewServer)
}

// headersSeenOverTLS is headersSeen on an https:// server that http.DefaultTransport trusts until
// the test ends (New's default HTTP client sends through it).
func headersSeenOverTLS(t *testing.T) (url string, seen func() [][2]string) {
	t.Helper()
	var srv *httptest.Server
	url, seen = headersSeenOn(t, func(h http.Handler) *httptest.Server { srv = httptest.NewTLSServer(h); return srv })
	saved := http.DefaultTransport
	http.DefaultTransport = srv.Client().Transport
	t.Cleanup(func() { http.DefaultTransport = saved })
	return url, seen
}

func headersSeenOn(t *testing.T, newServer func(http.Handler) *httptest.Server) (url string, seen func() [][2]string) {
	var mu sync.Mutex
	var got [][2]string
	srv := newServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, [2]string{r.Header.Get("Authorization"), r.Header.Get("X-Serverless-Authorization")})
		mu.Unlock()
		_, _ = io.WriteString(w, okIncrement)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() [][2]string { mu.Lock(); defer mu.Unlock(); return append([][2]string(nil), got...) }
}

// TestIAMTokenMovesToServerlessAuthorizationForAUsersToken: the IAM ID token is sent in
// Authorization, or in X-Serverless-Authorization when the call carries a user's Firebase ID token,
// which then goes in Authorization.
func TestIAMTokenMovesToServerlessAuthorizationForAUsersToken(t *testing.T) {
	url, seen := headersSeen(t)
	c, err := client.New(context.Background(), option.WithEndpoint(url),
		client.WithIDTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "iam", TokenType: "Bearer"})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Increment(context.Background(), client.Increment{Counter: "likes"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Increment(client.ContextWithIDToken(context.Background(), "user-token"), client.Increment{Counter: "likes"}); err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"Bearer iam", ""}, {"Bearer user-token", "Bearer iam"}}
	if got := seen(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("(Authorization, X-Serverless-Authorization) sent %q, want %q", got, want)
	}
}

// TestClientOptionsMakeTheIAMTokens: option.WithAuthCredentialsJSON (here a service account key
// whose token endpoint is a test server) make the ID tokens, for each function's URL as audience.
func TestClientOptionsMakeTheIAMTokens(t *testing.T) {
	url, seen := headersSeenOverTLS(t)
	claims, _ := json.Marshal(map[string]any{"exp": time.Now().Add(time.Hour).Unix()})
	idToken := "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString(claims) + ".c2ln"
	var mu sync.Mutex
	var audiences []string
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		// The assertion is a JWT signed with the key; its target_audience is the function's URL.
		mu.Lock()
		_, payload, _ := strings.Cut(r.Form.Get("assertion"), ".")
		payload, _, _ = strings.Cut(payload, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(payload)
		var assertion struct {
			Audience string `json:"target_audience"`
		}
		_ = json.Unmarshal(raw, &assertion)
		audiences = append(audiences, assertion.Audience)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id_token":"`+idToken+`"}`)
	}))
	defer tokens.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	sa, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": "caller@p.iam.gserviceaccount.com",
		"private_key_id": "k1", "private_key": string(pemKey), "token_uri": tokens.URL})
	c, err := client.New(context.Background(), client.WithEndpoints(client.Endpoints{Increment: url + "/Increment"}),
		option.WithAuthCredentialsJSON(option.ServiceAccount, sa))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Increment(context.Background(), client.Increment{Counter: "likes"}); err != nil {
		t.Fatal(err)
	}
	if got := seen(); len(got) != 1 || got[0][0] != "Bearer "+idToken {
		t.Errorf("Authorization sent %q, want the key's ID token", got)
	}
	if len(audiences) != 1 || audiences[0] != url+"/Increment" {
		t.Errorf("ID tokens asked for audiences %q, want the function's URL", audiences)
	}
}

// failingTokens fails every token.
type failingTokens struct{}

func (failingTokens) Token() (*oauth2.Token, error) {
	return nil, errors.New("metadata server unreachable")
}

// TestNoIAMTokenIsNotAnUnknownOutcome: when no ID token can be made, nothing is sent: the call's error
// says so, never an unknown outcome.
func TestNoIAMTokenIsNotAnUnknownOutcome(t *testing.T) {
	url, seen := headersSeen(t)
	var waits []time.Duration
	defer client.RecordWaits(&waits)()
	c, err := client.New(context.Background(), option.WithEndpoint(url), client.WithIDTokenSource(failingTokens{}), client.WithMaxAttempts(2))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Increment(context.Background(), client.Increment{Counter: "likes"})
	if err == nil || errors.Is(err, client.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "metadata server unreachable") {
		t.Errorf("error %v, want the token's failure, not an unknown outcome", err)
	}
	if n := len(seen()); n != 0 {
		t.Errorf("%d requests reached the function, want none", n)
	}
}

// TestGoogleOptionsAloneCallAnEndpoint: option.WithEndpoint and option.WithoutAuthentication are all
// a client needs, with no credentials anywhere (ADC points at a missing file); so is an http://
// endpoint without WithoutAuthentication; an https:// one without credentials fails in New.
func TestGoogleOptionsAloneCallAnEndpoint(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", t.TempDir()+"/missing.json")
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = io.WriteString(w, okIncrement)
	}))
	defer srv.Close()
	for _, opts := range [][]option.ClientOption{
		{option.WithEndpoint(srv.URL), option.WithoutAuthentication()},
		{option.WithEndpoint(srv.URL + "/")},
	} {
		c, err := client.New(context.Background(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Increment(context.Background(), client.Increment{Counter: "likes"}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"POST /Increment ", "POST /Increment "}; strings.Join(paths, "|") != strings.Join(want, "|") {
		t.Errorf("requests %q, want %q", paths, want)
	}
	if _, err := client.New(context.Background(), option.WithEndpoint("https://functions.example")); err == nil {
		t.Error("an https:// endpoint without credentials: no error from New")
	}
	if _, err := client.New(context.Background()); err == nil || !strings.Contains(err.Error(), "WithEndpoint") {
		t.Errorf("no endpoint: %v, want an error naming option.WithEndpoint", err)
	}
}
