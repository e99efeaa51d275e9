package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"
	"google.golang.org/api/option/internaloption"
	htransport "google.golang.org/api/transport/http"
)

// Endpoints are the functions' URLs; a call to one left empty fails.
type Endpoints struct {
	Increment, Count, Top, ConfigureCounter string
}

// endpointsAt is the functions at base/<EntryPoint>, as the local stack serves them.
func endpointsAt(base string) Endpoints {
	base = strings.TrimSuffix(base, "/")
	return Endpoints{Increment: base + "/Increment", Count: base + "/Count", Top: base + "/Top", ConfigureCounter: base + "/ConfigureCounter"}
}

// CloudFunctions is the deployed endpoints, https://REGION-PROJECT.cloudfunctions.net/<name>; give
// them to New with WithEndpoints.
func CloudFunctions(region, project string) Endpoints {
	base := "https://" + region + "-" + project + ".cloudfunctions.net"
	return Endpoints{Increment: base + "/increment", Count: base + "/count", Top: base + "/top", ConfigureCounter: base + "/configure-counter"}
}

// DefaultMaxAttempts bounds the attempts of one call.
const DefaultMaxAttempts = 10

// attemptTimeout outlasts the functions' 60 s timeout.
const attemptTimeout = 70 * time.Second

// Waits between attempts (docs/api.md, "Go client").
const (
	FirstBackoff  = 250 * time.Millisecond
	MaxBackoff    = 10 * time.Second
	MaxRetryAfter = 30 * time.Second
)

// Client calls the functions; it is safe for concurrent use.
type Client struct {
	endpoints   Endpoints
	clients     map[string]*http.Client
	maxAttempts int
	userAgent   string
}

// clientOption is an option of this client, given to New among Google's.
type clientOption struct {
	internaloption.EmbeddableAdapter
	apply func(*settings)
}

type settings struct {
	endpoints   *Endpoints
	tokens      oauth2.TokenSource
	maxAttempts int
}

// WithEndpoints calls each function at its own URL (a deployment: CloudFunctions); it takes
// precedence over option.WithEndpoint.
func WithEndpoints(e Endpoints) option.ClientOption {
	return &clientOption{apply: func(s *settings) { s.endpoints = &e }}
}

// WithIDTokenSource sends ts's token as the IAM ID token of every call, over http:// too, in place
// of the ID tokens New would make.
func WithIDTokenSource(ts oauth2.TokenSource) option.ClientOption {
	return &clientOption{apply: func(s *settings) { s.tokens = ts }}
}

// WithMaxAttempts bounds the attempts of one call (n ≥ 1; default DefaultMaxAttempts).
func WithMaxAttempts(n int) option.ClientOption {
	return &clientOption{apply: func(s *settings) { s.maxAttempts = max(n, 1) }}
}

// New returns a client of the functions, configured by Google's options as google-cloud-go's
// clients are, and by this package's (WithEndpoints, WithIDTokenSource, WithMaxAttempts):
//
//   - option.WithEndpoint(base): the functions are at base/Increment, base/Count, base/Top and
//     base/ConfigureCounter, as the local stack serves them. One of it and WithEndpoints is required.
//   - option.WithHTTPClient(hc): every request goes through hc as it is; New adds no ID token.
//   - option.WithoutAuthentication(): New adds no ID token.
//   - Otherwise each call to an https:// endpoint carries an ID token whose audience is the
//     endpoint's URL (what Cloud Run's IAM checks on a private deployment), made by
//     idtoken.NewTokenSource from the credentials the options name (option.WithCredentialsFile,
//     option.WithAuthCredentialsJSON, ...) or from Application Default Credentials. Calls to
//     http:// endpoints (the local stack) carry none, so local use needs no credentials.
//
// New fails when the options conflict or no ID token source can be made.
func New(ctx context.Context, opts ...option.ClientOption) (*Client, error) {
	s := settings{maxAttempts: DefaultMaxAttempts}
	var google []option.ClientOption
	for _, o := range opts {
		if own, ok := o.(*clientOption); ok {
			own.apply(&s)
			continue
		}
		google = append(google, o)
	}
	resolved, err := internaloption.NewUnsafeResolver(google...)
	if err != nil {
		return nil, fmt.Errorf("client options: %w", err)
	}
	// Google's reading of the options: the endpoint, and WithHTTPClient's client (else one of its
	// own, unused: this client's requests carry no OAuth token, only ID tokens).
	hc, endpoint, err := htransport.NewClient(ctx, append(slices.Clone(google), option.WithoutAuthentication(), internaloption.SkipDialSettingsValidation())...)
	if err != nil {
		return nil, fmt.Errorf("client options: %w", err)
	}
	customHTTP := resolved.ResolvedHTTPClientIsCustom()
	if !customHTTP {
		hc = &http.Client{Timeout: attemptTimeout}
	}
	endpoints := endpointsAt(endpoint)
	switch {
	case s.endpoints != nil:
		endpoints = *s.endpoints
	case endpoint == "":
		return nil, errors.New("client options: no endpoint: give option.WithEndpoint (the functions' base URL) or client.WithEndpoints")
	}
	c := &Client{endpoints: endpoints, clients: map[string]*http.Client{}, maxAttempts: s.maxAttempts, userAgent: userAgent()}
	makeTokens := s.tokens == nil && !customHTTP && !resolved.ResolvedWithoutAuthentication()
	for _, u := range []string{endpoints.Increment, endpoints.Count, endpoints.Top, endpoints.ConfigureCounter} {
		if u == "" || c.clients[u] != nil {
			continue
		}
		ts := s.tokens
		if makeTokens && strings.HasPrefix(u, "https://") {
			if ts, err = idtoken.NewTokenSource(ctx, u, google...); err != nil {
				return nil, fmt.Errorf("ID tokens for %s: %w", u, err)
			}
		}
		c.clients[u] = authorized(hc, ts)
	}
	return c, nil
}

// modulePath is this module's path, whose version names the client in User-Agent.
const modulePath = "github.com/shardcount/counters/client"

// userAgent is "shardcount-counters-go-client/<this module's version in the binary>".
func userAgent() string {
	v := "(devel)"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range append([]*debug.Module{&info.Main}, info.Deps...) {
			if m.Path == modulePath && m.Version != "" {
				v = m.Version
			}
		}
	}
	return "shardcount-counters-go-client/" + v
}

// authorized is base adding ts's token, if any.
func authorized(base *http.Client, ts oauth2.TokenSource) *http.Client {
	if ts == nil {
		return base
	}
	hc := *base
	hc.Transport = &iamTransport{source: oauth2.ReuseTokenSource(nil, ts), base: base.Transport}
	return &hc
}

// iamTransport adds the IAM ID token, in X-Serverless-Authorization when Authorization is taken.
type iamTransport struct {
	source oauth2.TokenSource
	base   http.RoundTripper // nil: http.DefaultTransport
}

func (t *iamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close() // a RoundTripper must
	}
	tok, err := t.source.Token()
	if err != nil {
		return nil, &notSentError{fmt.Errorf("IAM ID token: %w", err)}
	}
	r := req.Clone(req.Context())
	header := "Authorization"
	if r.Header.Get("Authorization") != "" {
		header = headerServerlessAuthorization
	}
	r.Header.Set(header, tok.Type()+" "+tok.AccessToken)
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// notSentError is a failure before sending: not applied.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() + " (nothing was sent)" }
func (e *notSentError) Unwrap() error { return e.err }

type idTokenKey struct{}

// ContextWithIDToken returns ctx carrying a user's Firebase ID token, sent in Authorization (a
// WithHTTPClient transport must keep it).
func ContextWithIDToken(ctx context.Context, idToken string) context.Context {
	return context.WithValue(ctx, idTokenKey{}, idToken)
}

// idTokenOf is ctx's ContextWithIDToken token, or "".
func idTokenOf(ctx context.Context) string {
	tok, _ := ctx.Value(idTokenKey{}).(string)
	return tok
}

var errNoURL = errors.New("no URL given for this function (Endpoints)")
