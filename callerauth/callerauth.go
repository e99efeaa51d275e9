// Package callerauth verifies Firebase Auth ID tokens and App Check tokens. Not a supported import.
package callerauth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	// RefuseAnonymous refuses ID tokens of anonymous sign-in; only with IDToken.
	RefuseAnonymous bool
	// VerifiedEmail refuses ID tokens without email_verified; only with IDToken.
	VerifiedEmail bool
	// CheckRevoked refuses revoked ID tokens and disabled users; only with IDToken.
	CheckRevoked bool
	// RevokedCacheTTL is how long CheckRevoked reuses a user's lookup; 0 reuses none.
	RevokedCacheTTL time.Duration
	// ConsumeAppCheck refuses a reused App Check token; only with AppCheck.
	ConsumeAppCheck bool
	// AppCheckAPI, when set, replaces the App Check API's URL (tests).
	AppCheckAPI string
}

// MaxCachedUsers bounds the users whose lookups a Verifier caches.
const MaxCachedUsers = 10_000

// Caller is who a request comes from, as verified.
type Caller struct {
	// UserID is the ID token's subject; empty without one.
	UserID string
	// AppID is the App Check token's subject; empty without one.
	AppID string
}

// Identity scopes keys and limits: "user:<uid>", else "app:<app ID>", else empty.
func (c Caller) Identity() string {
	switch {
	case c.UserID != "":
		return userPrefix + c.UserID
	case c.AppID != "":
		return "app:" + c.AppID
	}
	return ""
}

// IsUser reports whether identity (Caller.Identity) names a verified user.
func IsUser(identity string) bool { return strings.HasPrefix(identity, userPrefix) }

// userPrefix starts the identity of a verified user.
const userPrefix = "user:"

// Kind says which token a TokenError is about.
type Kind int

// The kinds of token.
const (
	IDToken Kind = iota
	AppCheckToken
)

// Reason says why a token was refused.
type Reason int

// The reasons a token is refused.
const (
	// Invalid: the token failed verification.
	Invalid Reason = iota
	Missing
	// Anonymous, Revoked, Unverified, Replayed: refused by a Requirements option.
	Anonymous
	Revoked
	Unverified
	Replayed
)

// TokenError is a required token missing, invalid or refused: the caller's fault.
type TokenError struct {
	// Kind is the token at fault.
	Kind Kind
	// Reason says why it was refused.
	Reason Reason
	// Err is the verification failure, if any.
	Err error
}

func (e *TokenError) Error() string {
	name := map[Kind]string{IDToken: "Firebase Auth ID token", AppCheckToken: "Firebase App Check token"}[e.Kind]
	switch e.Reason {
	case Missing:
		return "a " + name + " is required"
	case Anonymous:
		return "the " + name + " is of an anonymous user, which is not accepted"
	case Unverified:
		return "the " + name + " has no verified email address, which is required"
	case Replayed:
		return "the " + name + " was already consumed"
	case Revoked:
		return "the " + name + " is revoked: " + e.Err.Error()
	}
	return "the " + name + " is not valid: " + e.Err.Error()
}

func (e *TokenError) Unwrap() error { return e.Err }

// UnavailableError is a token the platform could not verify; retrying may succeed.
type UnavailableError struct {
	// Kind is the token that could not be verified.
	Kind Kind
	// Err is the failure.
	Err error
}

func (e *UnavailableError) Error() string {
	return "token verification unavailable: " + e.Err.Error()
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Verifier checks the tokens Requirements ask for.
type Verifier struct {
	idTokens        *auth.Client
	appCheck        *appcheck.Client
	refuseAnonymous bool
	verifiedEmail   bool
	checkRevoked    bool
	users           *userCache
	consumer        *tokenConsumer
}

// New returns a Verifier for project (empty: the credentials' project). It honours
// FIREBASE_AUTH_EMULATOR_HOST.
func New(ctx context.Context, project string, req Requirements) (*Verifier, error) {
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: project})
	if err != nil {
		return nil, fmt.Errorf("firebase app: %w", err)
	}
	v := &Verifier{refuseAnonymous: req.RefuseAnonymous, verifiedEmail: req.VerifiedEmail, checkRevoked: req.CheckRevoked,
		users: newUserCache(req.RevokedCacheTTL, MaxCachedUsers)}
	if req.IDToken {
		if v.idTokens, err = app.Auth(ctx); err != nil {
			return nil, fmt.Errorf("firebase auth client: %w", err)
		}
	}
	if req.AppCheck {
		if v.appCheck, err = app.AppCheck(ctx); err != nil {
			return nil, fmt.Errorf("firebase app check client (fetching its public keys): %w", err)
		}
		if req.ConsumeAppCheck {
			if v.consumer, err = newTokenConsumer(ctx, project, req.AppCheckAPI); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// RequiresIDToken says whether Verify requires an ID token.
func (v *Verifier) RequiresIDToken() bool { return v.idTokens != nil }

// Verify checks the required tokens ("" is absent) and returns the caller, or a *TokenError or
// *UnavailableError.
func (v *Verifier) Verify(ctx context.Context, idToken, appCheckToken string) (Caller, error) {
	var c Caller
	if v.appCheck != nil {
		if appCheckToken == "" {
			return Caller{}, &TokenError{Kind: AppCheckToken, Reason: Missing}
		}
		tok, err := v.verifyAppCheck(appCheckToken)
		if err != nil {
			return Caller{}, classify(ctx, AppCheckToken, err)
		}
		c.AppID = tok.AppID
	}
	if v.idTokens != nil {
		if idToken == "" {
			return Caller{}, &TokenError{Kind: IDToken, Reason: Missing}
		}
		tok, err := v.idTokens.VerifyIDToken(ctx, idToken)
		if err != nil {
			return Caller{}, classify(ctx, IDToken, err)
		}
		if v.refuseAnonymous && tok.Firebase.SignInProvider == "anonymous" {
			return Caller{}, &TokenError{Kind: IDToken, Reason: Anonymous}
		}
		if verified, _ := tok.Claims["email_verified"].(bool); v.verifiedEmail && !verified {
			return Caller{}, &TokenError{Kind: IDToken, Reason: Unverified}
		}
		if v.checkRevoked {
			if err := v.checkNotRevoked(ctx, tok); err != nil {
				return Caller{}, err
			}
		}
		c.UserID = tok.UID
	}
	if v.consumer != nil {
		if err := v.consumer.consume(ctx, appCheckToken); err != nil {
			return Caller{}, err
		}
	}
	return c, nil
}

// checkNotRevoked refuses a token of a revoked session or disabled user.
func (v *Verifier) checkNotRevoked(ctx context.Context, tok *auth.Token) error {
	user, ok := v.users.get(tok.UID)
	if !ok {
		record, err := v.idTokens.GetUser(ctx, tok.UID)
		switch {
		case auth.IsUserNotFound(err):
		case err != nil:
			return &UnavailableError{Kind: IDToken, Err: fmt.Errorf("look the user up: %w", err)}
		default:
			user = userState{exists: true, disabled: record.Disabled, validAfterMillis: record.TokensValidAfterMillis}
		}
		v.users.put(tok.UID, user)
	}
	switch {
	case !user.exists:
		return &TokenError{Kind: IDToken, Reason: Invalid, Err: errors.New("the user no longer exists")}
	case user.disabled:
		return &TokenError{Kind: IDToken, Reason: Revoked, Err: errors.New("the user is disabled")}
	case tok.IssuedAt*1000 < user.validAfterMillis:
		return &TokenError{Kind: IDToken, Reason: Revoked, Err: errors.New("issued before the user's sessions were revoked")}
	}
	return nil
}

// classify tells a platform failure from a bad token.
func classify(ctx context.Context, kind Kind, err error) error {
	if auth.IsCertificateFetchFailed(err) || ctx.Err() != nil ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &UnavailableError{Kind: kind, Err: err}
	}
	if auth.IsIDTokenRevoked(err) || auth.IsUserDisabled(err) { // Auth emulator
		return &TokenError{Kind: kind, Reason: Revoked, Err: err}
	}
	return &TokenError{Kind: kind, Reason: Invalid, Err: err}
}

// verifyAppCheck verifies token; an SDK panic on malformed claims is an error.
func (v *Verifier) verifyAppCheck(token string) (tok *appcheck.DecodedAppCheckToken, err error) {
	defer func() {
		if r := recover(); r != nil {
			tok, err = nil, errors.New("malformed claims")
		}
	}()
	return v.appCheck.VerifyToken(token)
}
