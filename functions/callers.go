package functions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/shared/wire"
)

// Headers that carry the caller's tokens, as the Firebase SDKs send them.
const (
	headerAuthorization = "Authorization"
	headerAppCheck      = "X-Firebase-AppCheck"
)

// RequireCallers makes Increment verify the tokens v requires on every request.
func (s *Service) RequireCallers(v *callerauth.Verifier) { s.increments.callers = v }

// requireCallersFromConfig builds the Verifier that cfg asks for, if any.
func (s *Service) requireCallersFromConfig(ctx context.Context) error {
	cfg := s.increments.cfg
	if !cfg.VerifiesCallers() {
		return nil
	}
	v, err := callerauth.New(ctx, cfg.Project, callerauth.Requirements{
		IDToken: cfg.RequireIDToken, AppCheck: cfg.RequireAppCheck, RefuseAnonymous: cfg.RefuseAnonymousUsers,
		VerifiedEmail: cfg.RequireVerifiedEmail,
		CheckRevoked:  cfg.CheckRevokedTokens, RevokedCacheTTL: cfg.RevokedCheckCacheTTL,
		ConsumeAppCheck: cfg.AppCheckReplayProtection})
	if err != nil {
		return err
	}
	s.RequireCallers(v)
	return nil
}

// verifiedCaller returns the request's verified caller identity (empty when not verified), or a 401,
// 403 or 503 as docs/api.md lists; why a token failed is logged, never sent.
func (h *incrementHandler) verifiedCaller(w http.ResponseWriter, r *http.Request) (string, error) {
	if h.callers == nil {
		return "", nil
	}
	var idToken string
	if h.callers.RequiresIDToken() { // else Authorization is not ours
		var err error
		if idToken, err = bearerToken(r); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_request"`)
			return "", err
		}
	}
	caller, err := h.callers.Verify(r.Context(), idToken, r.Header.Get(headerAppCheck))
	if err == nil {
		return caller.Identity(), nil
	}
	var (
		tokenErr    *callerauth.TokenError
		unavailable *callerauth.UnavailableError
	)
	switch {
	case errors.As(err, &unavailable):
		h.unverified.Add(context.WithoutCancel(r.Context()), tokenKind(unavailable.Kind), 1, slog.LevelWarn, slog.String("error", err.Error()))
		retryAfter := setRetryAfter(w)
		return "", &requestError{status: http.StatusServiceUnavailable, outcome: outcomeNotApplied,
			message: "the caller's token could not be verified right now; nothing was done; retry after " + retryAfter + " s"}
	case !errors.As(err, &tokenErr):
		return "", err
	}
	reason := tokenRefusal(tokenErr) // logged by countedIncrement
	switch {
	case tokenErr.Reason == callerauth.Replayed:
		return "", &requestError{status: http.StatusForbidden, field: headerAppCheck, reason: reason, cause: err,
			message: "this Firebase App Check token was already used: send a new limited-use token (getLimitedUseToken) with every request, retries included"}
	case tokenErr.Kind == callerauth.AppCheckToken:
		return "", &requestError{status: http.StatusForbidden, field: headerAppCheck, reason: reason, cause: err,
			message: "a valid Firebase App Check token is required: only the project's apps may call, with " + headerAppCheck + ": <token from the Firebase App Check SDK>"}
	case tokenErr.Reason == callerauth.Anonymous:
		return "", &requestError{status: http.StatusForbidden, field: headerAuthorization, reason: reason, cause: err,
			message: "anonymous users may not do this; sign in with an account, then send its ID token"}
	case tokenErr.Reason == callerauth.Unverified:
		return "", &requestError{status: http.StatusForbidden, field: headerAuthorization, reason: reason, cause: err,
			message: "only users with a verified email address may do this; verify the account's email address (sendEmailVerification), then send a new ID token"}
	}
	message := `a valid Firebase Auth ID token is required (this one is missing, malformed, expired or for another project); send "Authorization: Bearer <ID token>" with a current token from the Firebase Auth SDK (getIdToken)`
	switch {
	case tokenErr.Reason == callerauth.Revoked:
		message = "the Firebase Auth ID token was revoked (the user signed out everywhere or changed their password) or its account is disabled; sign in again, then send the new ID token"
	case googleSigned(idToken):
		message = "Authorization carries a Google-signed ID token (the IAM token of a private function's caller), not a Firebase Auth ID token: " +
			"send the IAM token in " + wire.HeaderServerlessAuthorization + " (Cloud Run checks it there) and the user's Firebase Auth ID token in Authorization"
	}
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	return "", &requestError{status: http.StatusUnauthorized, field: headerAuthorization, reason: reason, cause: err, message: message}
}

// googleSigned says whether token looks Google-signed (read unverified, only to pick a message).
func googleSigned(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Issuer string `json:"iss"`
	}
	if err != nil || json.Unmarshal(raw, &claims) != nil {
		return false
	}
	return claims.Issuer == "https://accounts.google.com" || claims.Issuer == "accounts.google.com"
}

// bearerToken reads "Authorization: Bearer <token>"; no header is an empty token.
func bearerToken(r *http.Request) (string, error) {
	values := r.Header.Values(headerAuthorization)
	if len(values) == 0 {
		return "", nil
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if len(values) > 1 || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", &requestError{status: http.StatusUnauthorized, field: headerAuthorization, reason: "authorization_header",
			message: `send one "Authorization: Bearer <Firebase Auth ID token>" header`}
	}
	return strings.TrimSpace(token), nil
}
