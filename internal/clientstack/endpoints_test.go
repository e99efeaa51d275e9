package clientstack_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/option"

	"github.com/shardcount/counters/client"
	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/shared/wire"
)

// okIncrement is a 200 answer of Increment.
const okIncrement = `{"counter":"likes","delta":1,"shard":0}`

// TestEndpointsNameTheFunctions holds option.WithEndpoint's paths and CloudFunctions to the entry
// points and deployed names that manifest.Deployed declares.
func TestEndpointsNameTheFunctions(t *testing.T) {
	names := map[string]string{}
	for _, f := range manifest.Deployed() {
		names[f.EntryPoint] = f.Name
	}
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.Error(w, `{"error":"refused"}`, http.StatusBadRequest)
	}))
	defer srv.Close()
	c, err := client.New(context.Background(), option.WithEndpoint(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, _ = c.Increment(ctx, client.Increment{Counter: "likes"})
	_, _ = c.Count(ctx, "likes")
	_, _ = c.Top(ctx, client.TopQuery{Group: "g"})
	_, _ = c.ConfigureCounter(ctx, client.Settings{Counter: "likes"})
	want := []string{"/" + functions.EntryIncrement, "/" + functions.EntryCount, "/" + functions.EntryTop, "/" + functions.EntryConfigureCounter}
	if fmt.Sprint(paths) != fmt.Sprint(want) {
		t.Errorf("option.WithEndpoint's paths %q, want the entry points %q", paths, want)
	}
	deployed := client.CloudFunctions("us-central1", "my-project")
	for entry, url := range map[string]string{
		functions.EntryIncrement: deployed.Increment, functions.EntryCount: deployed.Count,
		functions.EntryTop: deployed.Top, functions.EntryConfigureCounter: deployed.ConfigureCounter,
	} {
		if want := "https://us-central1-my-project.cloudfunctions.net/" + names[entry]; url != want {
			t.Errorf("CloudFunctions %s = %s, want %s", entry, url, want)
		}
	}
}

// TestIDTokensFromApplicationDefaultCredentials gives the client a service account key as
// Application Default Credentials, whose token endpoint is a local server (Google's cannot be
// reached here): each function at an https:// endpoint gets an ID token made for its own URL as
// the audience.
func TestIDTokensFromApplicationDefaultCredentials(t *testing.T) {
	var mu sync.Mutex
	audiences := map[string]string{} // ID token -> the target_audience it was asked for
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		claims := jwtClaims(t, r.PostForm.Get("assertion"))
		aud, _ := claims["target_audience"].(string)
		idToken := jwt(map[string]any{"aud": aud, "exp": time.Now().Add(time.Hour).Unix()})
		mu.Lock()
		audiences[idToken] = aud
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"id_token": idToken})
	}))
	defer tokens.Close()
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	creds, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": "backend@my-project.iam.gserviceaccount.com",
		"private_key_id": "1", "private_key": string(pemKey), "token_uri": tokens.URL, "project_id": "my-project"})
	file := filepath.Join(t.TempDir(), "credentials.json")
	if err := os.WriteFile(file, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)

	var seen []string // "path audience-of-its-token"
	functionsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+audiences[token])
		mu.Unlock()
		if r.URL.Path == "/Count" {
			_, _ = io.WriteString(w, `{"counter":"likes","count":1,"num_shards":10,"rollup":null}`)
			return
		}
		_, _ = io.WriteString(w, okIncrement)
	}))
	defer functionsSrv.Close()
	saved := http.DefaultTransport // New's default HTTP client sends through it
	http.DefaultTransport = functionsSrv.Client().Transport
	defer func() { http.DefaultTransport = saved }()
	c, err := client.New(context.Background(), option.WithEndpoint(functionsSrv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Increment(context.Background(), client.Increment{Counter: "likes"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Count(context.Background(), "likes"); err != nil {
		t.Fatal(err)
	}
	want := []string{"/Increment " + functionsSrv.URL + "/Increment", "/Count " + functionsSrv.URL + "/Count"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("requests with the audience of their ID token: %q, want %q", seen, want)
	}
}

// jwt is an unsigned JWT of claims (the client only reads its expiry).
func jwt(claims map[string]any) string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	return enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims) + ".c2ln"
}

// jwtClaims decodes the claims of a JWT without checking it.
func jwtClaims(t *testing.T, token string) map[string]any {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Errorf("assertion %q is no JWT", token)
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	claims := map[string]any{}
	if err == nil {
		err = json.Unmarshal(b, &claims)
	}
	if err != nil {
		t.Errorf("assertion claims: %v", err)
	}
	return claims
}

// TestClientSpeaksTheServersWire: the client module keeps its own copy of the increment answer's
// JSON fields (it cannot import the server's package shared/wire); they are the server's.
func TestClientSpeaksTheServersWire(t *testing.T) {
	fields := func(typ reflect.Type) []string {
		var names []string
		for f := range typ.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "-" && name != "" {
				names = append(names, name)
			}
		}
		return names
	}
	got, want := fields(reflect.TypeFor[client.Incremented]()), fields(reflect.TypeFor[wire.IncrementAnswer]())
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("client.Incremented's JSON fields %q, want shared/wire.IncrementAnswer's %q", got, want)
	}
}
