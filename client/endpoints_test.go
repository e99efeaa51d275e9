package client_test

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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/client"
	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/manifest"
)

// TestEndpointsNameTheFunctions holds Local and CloudFunctions to the entry points and deployed
// names that manifest.Deployed declares.
func TestEndpointsNameTheFunctions(t *testing.T) {
	names := map[string]string{}
	for _, f := range manifest.Deployed() {
		names[f.EntryPoint] = f.Name
	}
	local, deployed := client.Local("http://127.0.0.1:8080"), client.CloudFunctions("us-central1", "my-project")
	for entry, pair := range map[string][2]string{
		functions.EntryIncrement:        {local.Increment, deployed.Increment},
		functions.EntryCount:            {local.Count, deployed.Count},
		functions.EntryTop:              {local.Top, deployed.Top},
		functions.EntryConfigureCounter: {local.ConfigureCounter, deployed.ConfigureCounter},
	} {
		if want := "http://127.0.0.1:8080/" + entry; pair[0] != want {
			t.Errorf("Local %s = %s, want %s", entry, pair[0], want)
		}
		if want := "https://us-central1-my-project.cloudfunctions.net/" + names[entry]; pair[1] != want {
			t.Errorf("CloudFunctions %s = %s, want %s", entry, pair[1], want)
		}
	}
}

// TestIDTokensFromApplicationDefaultCredentials gives the client a service account key as
// Application Default Credentials, whose token endpoint is a local server (Google's cannot be
// reached here): each function gets an ID token made for its own URL as the audience.
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
	functionsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	endpoints := client.Local(functionsSrv.URL)
	c, err := client.New(context.Background(), endpoints)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Increment(context.Background(), client.Increment{Counter: "likes"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Count(context.Background(), "likes"); err != nil {
		t.Fatal(err)
	}
	want := []string{"/Increment " + endpoints.Increment, "/Count " + endpoints.Count}
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
