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

// Endpoints are the URLs of the HTTP functions. A call to a function whose URL is empty fails.
type Endpoints struct {
	Increment, Count, Top, ConfigureCounter string
}

// Local is the endpoints of functions served at base/<EntryPoint>, as the local stack (make run,
// http://127.0.0.1:8080) and functions-framework-go serve them.
func Local(base string) Endpoints {
	return Endpoints{Increment: base + "/Increment", Count: base + "/Count", Top: base + "/Top", ConfigureCounter: base + "/ConfigureCounter"}
}

// CloudFunctions is the endpoints of the functions as both deploy paths name them, at their Cloud
// Functions URLs: https://REGION-PROJECT.cloudfunctions.net/<name>.
func CloudFunctions(region, project string) Endpoints {
	base := "https://" + region + "-" + project + ".cloudfunctions.net"
	return Endpoints{Increment: base + "/increment", Count: base + "/count", Top: base + "/top", ConfigureCounter: base + "/configure-counter"}
}

// DefaultMaxAttempts bounds how often one call is sent (the first time included) when its answers
// are 503 or unknown outcomes.
const DefaultMaxAttempts = 10

// attemptTimeout bounds one attempt of the default HTTP client: past the deployed functions' timeout
// (60 s), after which Cloud Run answers 504 itself.
const attemptTimeout = 70 * time.Second

// The waits between attempts (docs/api.md, "Retrying"; the web client's defaults are the same):
// after an answer without Retry-After, a random wait up to FirstBackoff doubled per failed attempt,
// at most MaxBackoff (full jitter); after a Retry-After, its wait, at most MaxRetryAfter.
const (
	FirstBackoff  = 250 * time.Millisecond
	MaxBackoff    = 10 * time.Second
	MaxRetryAfter = 30 * time.Second
)

// Client calls the counters' functions. It is safe for concurrent use.
type Client struct {
	endpoints   Endpoints
	clients     map[string]*http.Client // by URL
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

// WithHTTPClient sends every request with hc, which then makes the requests' credentials: the client
// adds no ID token of its own (unless WithTokenSource is given too). http.DefaultClient suits the
// local stack.
func WithHTTPClient(hc *http.Client) Option { return func(s *settings) { s.httpClient = hc } }

// WithTokenSource authorizes every request with ts's token (Authorization: Bearer), for every
// function, instead of ID tokens from Application Default Credentials.
func WithTokenSource(ts oauth2.TokenSource) Option { return func(s *settings) { s.tokens = ts } }

// WithClientOptions makes the IAM ID tokens with opts (google.golang.org/api/idtoken.NewTokenSource)
// instead of from Application Default Credentials: e.g. option.WithAuthCredentialsFile with
// option.ServiceAccount (a key) or option.ImpersonatedServiceAccount (a configuration that
// impersonates a service account, as `gcloud auth application-default login
// --impersonate-service-account SA` writes). Ignored with WithTokenSource or WithHTTPClient.
func WithClientOptions(opts ...option.ClientOption) Option {
	return func(s *settings) { s.clientOptions = append(s.clientOptions, opts...) }
}

// WithMaxAttempts bounds how often one call is sent (n ≥ 1; default DefaultMaxAttempts).
func WithMaxAttempts(n int) Option { return func(s *settings) { s.maxAttempts = max(n, 1) } }

// New returns a client of the functions at endpoints. Without WithHTTPClient or WithTokenSource it
// makes an ID token source from Application Default Credentials (or WithClientOptions) for each URL
// (its audience); that fails for credentials that cannot make ID tokens (a user's gcloud login: use a
// service account, or impersonate one). The ID token goes in Authorization, or in
// X-Serverless-Authorization when a call carries a user's ID token (ContextWithIDToken).
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

// authorized is base, adding ts's token to every request when ts is not nil.
func authorized(base *http.Client, ts oauth2.TokenSource) *http.Client {
	if ts == nil {
		return base
	}
	hc := *base
	hc.Transport = &iamTransport{source: oauth2.ReuseTokenSource(nil, ts), base: base.Transport}
	return &hc
}

// iamTransport adds the IAM ID token to each request: in Authorization, or in
// X-Serverless-Authorization when Authorization already carries a user's token (Cloud Run then checks
// X-Serverless-Authorization and passes Authorization on to the function).
type iamTransport struct {
	source oauth2.TokenSource
	base   http.RoundTripper // nil: http.DefaultTransport
}

func (t *iamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close() // a RoundTripper closes the body, also on errors
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

// notSentError is a failure before the request went out: certainly not applied.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() + " (nothing was sent)" }
func (e *notSentError) Unwrap() error { return e.err }

// idTokenKey is the context key of ContextWithIDToken's token.
type idTokenKey struct{}

// ContextWithIDToken returns ctx carrying idToken, the Firebase Auth ID token of the user a backend
// calls for: calls made with the returned context send it as "Authorization: Bearer <idToken>" (the
// functions verify it under REQUIRE_ID_TOKEN, docs/api.md), and the client's own IAM ID token for a
// private function in X-Serverless-Authorization. With WithHTTPClient, hc's transport must leave
// Authorization as it finds it.
func ContextWithIDToken(ctx context.Context, idToken string) context.Context {
	return context.WithValue(ctx, idTokenKey{}, idToken)
}

// idTokenOf is ctx's ContextWithIDToken token, "" for none.
func idTokenOf(ctx context.Context) string {
	tok, _ := ctx.Value(idTokenKey{}).(string)
	return tok
}

// errNoURL is the error of a call to a function whose URL was not given.
var errNoURL = errors.New("no URL given for this function (Endpoints)")
