package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/oauth2"
	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	"github.com/shardcount/counters/shared/wire"
	"github.com/shardcount/counters/version"
)

// Endpoints are the functions' URLs; a call to one left empty fails.
type Endpoints struct {
	Increment, Count, Top, ConfigureCounter string
}

// Local is the endpoints at base/<EntryPoint> (the local stack).
func Local(base string) Endpoints {
	return Endpoints{Increment: base + "/Increment", Count: base + "/Count", Top: base + "/Top", ConfigureCounter: base + "/ConfigureCounter"}
}

// CloudFunctions is the deployed endpoints, https://REGION-PROJECT.cloudfunctions.net/<name>.
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

// Option configures a Client.
type Option func(*settings)

type settings struct {
	httpClient    *http.Client
	tokens        oauth2.TokenSource
	clientOptions []option.ClientOption
	maxAttempts   int
}

// WithHTTPClient sends requests with hc, adding no ID token unless WithTokenSource.
func WithHTTPClient(hc *http.Client) Option { return func(s *settings) { s.httpClient = hc } }

// WithTokenSource sends ts's token instead of ID tokens.
func WithTokenSource(ts oauth2.TokenSource) Option { return func(s *settings) { s.tokens = ts } }

// WithClientOptions makes the ID tokens with opts (idtoken.NewTokenSource).
func WithClientOptions(opts ...option.ClientOption) Option {
	return func(s *settings) { s.clientOptions = append(s.clientOptions, opts...) }
}

// WithMaxAttempts bounds the attempts of one call (n ≥ 1).
func WithMaxAttempts(n int) Option { return func(s *settings) { s.maxAttempts = max(n, 1) } }

// New returns a client of endpoints; by default its credentials must make ID tokens (a service
// account).
func New(ctx context.Context, endpoints Endpoints, opts ...Option) (*Client, error) {
	s := settings{maxAttempts: DefaultMaxAttempts}
	for _, o := range opts {
		o(&s)
	}
	c := &Client{endpoints: endpoints, clients: map[string]*http.Client{}, maxAttempts: s.maxAttempts,
		userAgent: "shardcount-counters-go-client/" + version.Version}
	base := s.httpClient
	if base == nil {
		base = &http.Client{Timeout: attemptTimeout}
	}
	for _, url := range []string{endpoints.Increment, endpoints.Count, endpoints.Top, endpoints.ConfigureCounter} {
		if url == "" || c.clients[url] != nil {
			continue
		}
		ts := s.tokens
		if ts == nil && s.httpClient == nil {
			var err error
			if ts, err = idtoken.NewTokenSource(ctx, url, s.clientOptions...); err != nil {
				return nil, fmt.Errorf("ID tokens for %s from Application Default Credentials: %w", url, err)
			}
		}
		c.clients[url] = authorized(base, ts)
	}
	return c, nil
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
		header = wire.HeaderServerlessAuthorization
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
