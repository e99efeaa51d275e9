// Package callerauth verifies who calls a public function: a Firebase Auth ID token names the user,
// a Firebase App Check token attests the app, both checked with the Firebase Admin SDK (signature,
// issuer, audience = this project, expiry). The verified identity scopes idempotency keys and per-user
// limits. It knows tokens, not HTTP: the functions read the headers and map the errors to answers.
package callerauth

import (
	"context"
	"errors"
	"fmt"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/appcheck"
	"firebase.google.com/go/v4/auth"
)

// Requirements say which tokens a request must carry.
type Requirements struct {
	// IDToken requires a Firebase Auth ID token.
	IDToken bool
	// AppCheck requires a Firebase App Check token.
	AppCheck bool
}

// Caller is who a request comes from, as verified.
type Caller struct {
	// UserID is the Firebase Auth user ID (the ID token's subject); empty without an ID token.
	UserID string
	// AppID is the Firebase app ID (the App Check token's subject); empty without an App Check token.
	AppID string
}

// Identity is the caller's identity for scoping keys and limits: "user:<uid>" when a user was
// verified (whatever app they use), else "app:<app ID>", else empty (nobody was verified).
func (c Caller) Identity() string {
	switch {
	case c.UserID != "":
		return "user:" + c.UserID
	case c.AppID != "":
		return "app:" + c.AppID
	}
	return ""
}

// Kind says which token a TokenError is about.
type Kind int

// The kinds of token.
const (
	// IDToken is a Firebase Auth ID token.
	IDToken Kind = iota
	// AppCheckToken is a Firebase App Check token.
	AppCheckToken
)

// TokenError is a required token that is missing or failed verification.
type TokenError struct {
	// Kind is the token at fault.
	Kind Kind
	// Missing is true when the request carried no such token.
	Missing bool
	// Err is why verification failed (nil when Missing).
	Err error
}

func (e *TokenError) Error() string {
	name := map[Kind]string{IDToken: "Firebase Auth ID token", AppCheckToken: "Firebase App Check token"}[e.Kind]
	if e.Missing {
		return "a " + name + " is required"
	}
	return "the " + name + " is not valid: " + e.Err.Error()
}

func (e *TokenError) Unwrap() error { return e.Err }

// Verifier checks the tokens Requirements ask for: a token is required when its client is set.
type Verifier struct {
	idTokens *auth.Client
	appCheck *appcheck.Client
}

// New returns a Verifier for project (empty: the project of the runtime's credentials). With
// FIREBASE_AUTH_EMULATOR_HOST set, ID tokens are the Auth emulator's (unsigned, as it issues them);
// App Check keys are fetched once here and refreshed by the SDK.
func New(ctx context.Context, project string, req Requirements) (*Verifier, error) {
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: project})
	if err != nil {
		return nil, fmt.Errorf("firebase app: %w", err)
	}
	v := &Verifier{}
	if req.IDToken {
		if v.idTokens, err = app.Auth(ctx); err != nil {
			return nil, fmt.Errorf("firebase auth client: %w", err)
		}
	}
	if req.AppCheck {
		if v.appCheck, err = app.AppCheck(ctx); err != nil {
			return nil, fmt.Errorf("firebase app check client (fetching its public keys): %w", err)
		}
	}
	return v, nil
}

// Verify checks the required tokens (empty strings are absent tokens) and returns the verified caller.
// Tokens that are not required are ignored, so an optional token never changes who the caller is.
// A missing or invalid required token is a *TokenError.
func (v *Verifier) Verify(ctx context.Context, idToken, appCheckToken string) (Caller, error) {
	var c Caller
	if v.appCheck != nil {
		if appCheckToken == "" {
			return Caller{}, &TokenError{Kind: AppCheckToken, Missing: true}
		}
		tok, err := v.verifyAppCheck(appCheckToken)
		if err != nil {
			return Caller{}, &TokenError{Kind: AppCheckToken, Err: err}
		}
		c.AppID = tok.AppID
	}
	if v.idTokens != nil {
		if idToken == "" {
			return Caller{}, &TokenError{Kind: IDToken, Missing: true}
		}
		tok, err := v.idTokens.VerifyIDToken(ctx, idToken)
		if err != nil {
			return Caller{}, &TokenError{Kind: IDToken, Err: err}
		}
		c.UserID = tok.UID
	}
	return c, nil
}

// verifyAppCheck verifies an App Check token. The SDK asserts the types of claims it reads after the
// signature check, so a token signed by a trusted key but shaped unlike App Check's (say, a string
// "aud") would panic; that is an invalid token, not a crash.
func (v *Verifier) verifyAppCheck(token string) (tok *appcheck.DecodedAppCheckToken, err error) {
	defer func() {
		if r := recover(); r != nil {
			tok, err = nil, errors.New("malformed claims")
		}
	}()
	return v.appCheck.VerifyToken(token)
}
