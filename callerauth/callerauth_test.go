package callerauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/auth"
	"github.com/golang-jwt/jwt/v4"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/testenv"
)

const project = "demo-callerauth"

// productionVerifier is a Verifier of ID tokens outside emulator mode (FIREBASE_AUTH_EMULATOR_HOST
// unset), as deployed functions run.
func productionVerifier(t *testing.T) *callerauth.Verifier {
	t.Helper()
	testenv.OutsideEmulatorMode(t, project)
	v, err := callerauth.New(context.Background(), project, callerauth.Requirements{IDToken: true})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// idClaims are the claims of a well-formed ID token of this project for user u, valid for an hour.
func idClaims(u string) map[string]any {
	now := time.Now().Unix()
	return map[string]any{"aud": project, "iss": "https://securetoken.google.com/" + project, "sub": u, "user_id": u,
		"iat": now, "exp": now + 3600, "auth_time": now, "firebase": map[string]any{"sign_in_provider": "password"}}
}

// unsigned is a JWT with the given header and claims and no signature (as the Auth emulator issues).
func unsigned(header, claims map[string]any) string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	return enc(header) + "." + enc(claims) + "."
}

// TestUnsignedIDTokensAreRefusedOutsideEmulatorMode: without FIREBASE_AUTH_EMULATOR_HOST, tokens the
// Auth emulator would accept (alg none), and tokens forged with a made-up key, are refused as invalid
// tokens whatever their claims, before any key is fetched.
func TestUnsignedIDTokensAreRefusedOutsideEmulatorMode(t *testing.T) {
	v := productionVerifier(t)
	hs256, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(idClaims("mallory"))).SignedString([]byte("guessed"))
	if err != nil {
		t.Fatal(err)
	}
	forged := map[string]string{
		"alg none":                    unsigned(map[string]any{"alg": "none", "typ": "JWT"}, idClaims("mallory")),
		"alg none with a kid":         unsigned(map[string]any{"alg": "none", "typ": "JWT", "kid": "k1"}, idClaims("mallory")),
		"HS256 with a made-up secret": hs256,
	}
	for name, token := range forged {
		caller, err := v.Verify(context.Background(), token, "")
		var tokenErr *callerauth.TokenError
		if !errors.As(err, &tokenErr) || tokenErr.Kind != callerauth.IDToken || tokenErr.Reason != callerauth.Invalid {
			t.Errorf("%s: caller %+v, error %v; want an invalid ID token", name, caller, err)
		}
	}
}

// TestKeyFetchFailuresAreThePlatforms: a well-formed RS256 token whose signing keys cannot be fetched
// (here: the request has ended) is an *UnavailableError, not a bad token.
func TestKeyFetchFailuresAreThePlatforms(t *testing.T) {
	v := productionVerifier(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims(idClaims("ann")))
	tok.Header["kid"] = "k1"
	signed, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = v.Verify(ctx, signed, "")
	var unavailable *callerauth.UnavailableError
	if !errors.As(err, &unavailable) || unavailable.Kind != callerauth.IDToken {
		t.Errorf("error %v (%T); want an *UnavailableError", err, err)
	}
	var tokenErr *callerauth.TokenError
	if errors.As(err, &tokenErr) {
		t.Errorf("error %v is also a *TokenError", err)
	}
}

// TestMissingTokens: a required token that is absent is a TokenError with Reason Missing.
func TestMissingTokens(t *testing.T) {
	v := productionVerifier(t)
	_, err := v.Verify(context.Background(), "", "")
	var tokenErr *callerauth.TokenError
	if !errors.As(err, &tokenErr) || tokenErr.Reason != callerauth.Missing || tokenErr.Kind != callerauth.IDToken {
		t.Errorf("error %v; want a missing ID token", err)
	}
}

// googleEndpoints answers, on one local TLS server, what a Firebase Admin SDK outside emulator mode
// asks Google: the public keys of ID tokens (a key of the test's own, so that it can sign tokens),
// OAuth access tokens for the runtime's service account, and the Identity Toolkit API, which it
// hands to the Auth emulator (the real account store: users, revocations, disabled accounts).
type googleEndpoints struct {
	key     *rsa.PrivateKey
	lookups atomic.Int64 // Identity Toolkit requests received
	down    atomic.Bool  // the Identity Toolkit API answers 503
}

// newGoogleEndpoints starts the endpoints and makes them http.DefaultTransport's destination until
// t ends: the Admin SDK clones it for some clients and uses it directly for others (OAuth tokens).
func newGoogleEndpoints(t *testing.T, authEmulator string) *googleEndpoints {
	t.Helper()
	g := &googleEndpoints{}
	emulator := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	var err error
	if g.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	selfSigned := func(key *rsa.PrivateKey, hosts ...string) []byte {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, DNSNames: hosts,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	signingCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: selfSigned(g.key)})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.Host {
		case "www.googleapis.com": // the ID tokens' signing keys
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_ = json.NewEncoder(w).Encode(map[string]string{"k1": string(signingCert)})
		case "oauth2.googleapis.com":
			_, _ = io.WriteString(w, `{"access_token":"test","token_type":"Bearer","expires_in":3600}`)
		case "identitytoolkit.googleapis.com":
			g.lookups.Add(1)
			if g.down.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, `{"error":{"code":503,"status":"UNAVAILABLE","message":"down (test)"}}`)
				return
			}
			req, err := http.NewRequestWithContext(r.Context(), r.Method,
				"http://"+authEmulator+"/identitytoolkit.googleapis.com"+r.URL.RequestURI(), r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
			req.Header.Set("Authorization", "Bearer owner") // the emulator's administrator
			resp, err := emulator.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, resp.Body)
		default:
			t.Errorf("unexpected request to %s%s", r.Host, r.URL.Path)
			http.NotFound(w, r)
		}
	}))
	serverKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	serverCert := selfSigned(serverKey, "www.googleapis.com", "oauth2.googleapis.com", "identitytoolkit.googleapis.com")
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{serverCert}, PrivateKey: serverKey}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	parsed, err := x509.ParseCertificate(serverCert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(parsed)
	// Every host dials the server, whose certificate is trusted.
	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", srv.Listener.Addr().String())
		},
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}
	saved := http.DefaultTransport
	http.DefaultTransport = transport
	t.Cleanup(func() { http.DefaultTransport = saved })
	return g
}

// verifier is a Verifier outside emulator mode, as deployed functions run, whose calls to Google
// reach g.
func (g *googleEndpoints) verifier(t *testing.T, project string, req callerauth.Requirements) *callerauth.Verifier {
	t.Helper()
	testenv.OutsideEmulatorMode(t, project)
	v, err := callerauth.New(context.Background(), project, req)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// idToken is an ID token of project for uid issued now, signed with g's key as Google signs them.
func (g *googleEndpoints) idToken(t *testing.T, project, uid string) string {
	t.Helper()
	claims := idClaims(uid)
	claims["aud"], claims["iss"] = project, "https://securetoken.google.com/"+project
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims(claims))
	tok.Header["kid"] = "k1"
	signed, err := tok.SignedString(g.key)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// TestRevokedIDTokensAreRefusedWhenAsked: outside emulator mode, with CheckRevoked a signed ID token
// issued before the user's sessions were revoked, or of a disabled user, is refused (Reason
// Revoked), each verification costing one Identity Toolkit lookup (one per user within
// RevokedCacheTTL when set), and a lookup the platform fails
// is an *UnavailableError; without it the same token is accepted until it expires, and nothing is
// looked up. The accounts are the Auth emulator's, revoked and disabled with the Admin SDK.
func TestRevokedIDTokensAreRefusedWhenAsked(t *testing.T) {
	testenv.SkipIfShort(t, "the Auth emulator")
	host := os.Getenv(emulators.AuthHostEnv)
	if host == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, which starts the Auth emulator", emulators.AuthHostEnv)
	}
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	ctx := context.Background()
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: project})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := app.Auth(ctx) // in emulator mode: the emulator's accounts
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := admin.CreateUser(ctx, (&auth.UserToCreate{}).Email(strings.ToLower(rand.Text()[:10])+"@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	disabled, err := admin.CreateUser(ctx, (&auth.UserToCreate{}).Email(strings.ToLower(rand.Text()[:10])+"@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	g := newGoogleEndpoints(t, host)
	checking := g.verifier(t, project, callerauth.Requirements{IDToken: true, CheckRevoked: true})
	trusting := g.verifier(t, project, callerauth.Requirements{IDToken: true})

	time.Sleep(1100 * time.Millisecond) // tokens carry seconds: issue them after the accounts' creation second
	tokens := map[string]string{revoked.UID: g.idToken(t, project, revoked.UID), disabled.UID: g.idToken(t, project, disabled.UID)}
	for uid, token := range tokens {
		if c, err := checking.Verify(ctx, token, ""); err != nil || c.UserID != uid {
			t.Fatalf("before any revocation: caller %+v, error %v; want user %s", c, err, uid)
		}
	}
	time.Sleep(1100 * time.Millisecond) // the revocation comes a second after the tokens' issue
	if err := admin.RevokeRefreshTokens(ctx, revoked.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UpdateUser(ctx, disabled.UID, (&auth.UserToUpdate{}).Disabled(true)); err != nil {
		t.Fatal(err)
	}

	g.lookups.Store(0)
	for uid, token := range tokens {
		c, err := checking.Verify(ctx, token, "")
		var tokenErr *callerauth.TokenError
		if !errors.As(err, &tokenErr) || tokenErr.Kind != callerauth.IDToken || tokenErr.Reason != callerauth.Revoked {
			t.Errorf("%s, revoked or disabled, with CheckRevoked: caller %+v, error %v; want a revoked ID token", uid, c, err)
		}
	}
	if n := g.lookups.Load(); n != int64(len(tokens)) {
		t.Errorf("%d Identity Toolkit requests for %d verifications, want one each", n, len(tokens))
	}
	g.lookups.Store(0)
	for uid, token := range tokens {
		if c, err := trusting.Verify(ctx, token, ""); err != nil || c.UserID != uid {
			t.Errorf("without CheckRevoked: caller %+v, error %v; want user %s (the token is valid until it expires)", c, err, uid)
		}
	}
	if n := g.lookups.Load(); n != 0 {
		t.Errorf("without CheckRevoked: %d Identity Toolkit requests, want none", n)
	}
	caching := g.verifier(t, project, callerauth.Requirements{IDToken: true, CheckRevoked: true, RevokedCacheTTL: time.Hour})
	g.lookups.Store(0)
	for range 5 {
		if _, err := caching.Verify(ctx, tokens[revoked.UID], ""); err == nil {
			t.Error("a revoked token accepted with a cache")
		}
	}
	if n := g.lookups.Load(); n != 1 {
		t.Errorf("with RevokedCacheTTL: %d Identity Toolkit requests for 5 verifications of one user, want 1", n)
	}

	g.down.Store(true)
	_, err = checking.Verify(ctx, tokens[revoked.UID], "")
	var unavailable *callerauth.UnavailableError
	if !errors.As(err, &unavailable) || unavailable.Kind != callerauth.IDToken {
		t.Errorf("Identity Toolkit down: error %v (%T); want an *UnavailableError", err, err)
	}
}
