// Package callerauth verifies who calls a public function: a Firebase Auth ID token names the user,
// a Firebase App Check token attests the app, both checked with the Firebase Admin SDK (signature,
// issuer, audience = this project, expiry). The verified identity scopes idempotency keys and per-user
// limits. It knows tokens, not HTTP: the functions read the headers and map the errors to answers.
//
// Not a supported import: see package counters for what users may import.
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
	// RefuseAnonymous refuses ID tokens of anonymous sign-in (sign-in provider "anonymous"), which
	// anyone can get without limit; it matters only with IDToken.
	RefuseAnonymous bool
	// VerifiedEmail refuses ID tokens without a verified email address (claim email_verified), so
	// that a user is an address someone controls, not an account made at will by email sign-up (nor
	// an anonymous one); it matters only with IDToken.
	VerifiedEmail bool
	// CheckRevoked also refuses ID tokens issued before the user's sessions were revoked (the
	// user's tokensValidAfterTime: a revocation, a password change) and those of disabled users,
	// which are otherwise accepted until they expire (up to an hour). It costs one Identity Toolkit
	// accounts:lookup per user and RevokedCacheTTL; it matters only with IDToken.
	CheckRevoked bool
	// RevokedCacheTTL is how long CheckRevoked reuses a user's lookup (0: none is reused), for at
	// most MaxCachedUsers users: a revocation takes effect within it.
	RevokedCacheTTL time.Duration
	// ConsumeAppCheck consumes each App Check token through the App Check API once every other
	// check has passed, as the Admin SDK for Node does with consume, and refuses one already
	// consumed. It costs one API call per request; it matters only with AppCheck.
	ConsumeAppCheck bool
	// AppCheckAPI, when set, is the base URL ConsumeAppCheck calls instead of Google's, without
	// credentials: a stand-in for the API in tests.
	AppCheckAPI string
}

// MaxCachedUsers bounds the users whose lookups a Verifier keeps (Requirements.RevokedCacheTTL).
const MaxCachedUsers = 10_000

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
		return userPrefix + c.UserID
	case c.AppID != "":
		return "app:" + c.AppID
	}
	return ""
}

// IsUser reports whether identity (Caller.Identity) names a verified user, not an app or nobody.
func IsUser(identity string) bool { return strings.HasPrefix(identity, userPrefix) }

// userPrefix starts the identity of a verified user.
const userPrefix = "user:"

// Kind says which token a TokenError is about.
type Kind int

// The kinds of token.
const (
	// IDToken is a Firebase Auth ID token.
	IDToken Kind = iota
	// AppCheckToken is a Firebase App Check token.
	AppCheckToken
)

// Reason says why a token was refused.
type Reason int

// The reasons a token is refused.
const (
	// Invalid: the token failed verification (signature, issuer, audience, expiry, shape).
	Invalid Reason = iota
	// Missing: the request carried no such token.
	Missing
	// Anonymous: a valid ID token of an anonymous user, refused by Requirements.RefuseAnonymous.
	Anonymous
	// Revoked: an ID token issued before the user's sessions were revoked, or of a disabled user,
	// refused by Requirements.CheckRevoked.
	Revoked
	// Unverified: a valid ID token without a verified email address, refused by
	// Requirements.VerifiedEmail.
	Unverified
	// Replayed: a valid App Check token already consumed, refused by Requirements.ConsumeAppCheck.
	Replayed
)

// TokenError is a required token that is missing, failed verification or is refused: the caller's
// fault, never the platform's (that is an *UnavailableError).
type TokenError struct {
	// Kind is the token at fault.
	Kind Kind
	// Reason says why it was refused.
	Reason Reason
	// Err is why verification failed or the token was revoked (nil when Reason is Missing,
	// Anonymous, Unverified or Replayed).
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

// UnavailableError is a token that could not be verified for a reason of the platform (the public
// keys could not be fetched, a transport failure, the request's deadline): retrying may succeed.
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

// Verifier checks the tokens Requirements ask for: a token is required when its client is set.
type Verifier struct {
	idTokens        *auth.Client
	appCheck        *appcheck.Client
	refuseAnonymous bool
	verifiedEmail   bool
	checkRevoked    bool
	users           *userCache
	consumer        *tokenConsumer
}

// New returns a Verifier for project (empty: the project of the runtime's credentials). With
// FIREBASE_AUTH_EMULATOR_HOST set, ID tokens are the Auth emulator's (unsigned, as it issues them);
// App Check keys are fetched once here and refreshed by the SDK.
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

// RequiresIDToken says whether Verify requires an ID token; when not, the caller's Authorization
// header is none of its business.
func (v *Verifier) RequiresIDToken() bool { return v.idTokens != nil }

// Verify checks the required tokens (empty strings are absent tokens) and returns the verified caller.
// Tokens that are not required are ignored, so an optional token never changes who the caller is.
// A missing, invalid or refused required token is a *TokenError; a token that could not be verified
// for the platform's reasons is an *UnavailableError.
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

// checkNotRevoked looks the token's user up (Identity Toolkit accounts:lookup, or the cache), as the
// Admin SDK's VerifyIDTokenAndCheckRevoked does, and refuses a token issued before the user's
// tokensValidAfterTime or of a disabled user. A user that no longer exists is an invalid token; any
// other failure of the lookup is the platform's.
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

// classify tells a verification failure of the platform (the keys could not be fetched, the request
// ended) from a bad token.
func classify(ctx context.Context, kind Kind, err error) error {
	if auth.IsCertificateFetchFailed(err) || ctx.Err() != nil ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &UnavailableError{Kind: kind, Err: err}
	}
	if auth.IsIDTokenRevoked(err) || auth.IsUserDisabled(err) { // the Auth emulator's verification checks
		return &TokenError{Kind: kind, Reason: Revoked, Err: err}
	}
	return &TokenError{Kind: kind, Reason: Invalid, Err: err}
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
