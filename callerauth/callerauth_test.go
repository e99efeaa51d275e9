package callerauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"

	"github.com/shardcount/counters/callerauth"
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
