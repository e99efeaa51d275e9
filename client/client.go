package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/oauth2"
	"google.golang.org/api/idtoken"

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

// Backoff between attempts after an unknown outcome, or a 503 without Retry-After.
const (
	firstBackoff = 200 * time.Millisecond
	maxBackoff   = 5 * time.Second
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
	httpClient  *http.Client
	tokens      oauth2.TokenSource
	maxAttempts int
}

// WithHTTPClient sends every request with hc, which then makes the requests' credentials: the client
// adds no ID token of its own (unless WithTokenSource is given too). http.DefaultClient suits the
// local stack.
func WithHTTPClient(hc *http.Client) Option { return func(s *settings) { s.httpClient = hc } }

// WithTokenSource authorizes every request with ts's token (Authorization: Bearer), for every
// function, instead of ID tokens from Application Default Credentials.
func WithTokenSource(ts oauth2.TokenSource) Option { return func(s *settings) { s.tokens = ts } }

// WithMaxAttempts bounds how often one call is sent (n ≥ 1; default DefaultMaxAttempts).
func WithMaxAttempts(n int) Option { return func(s *settings) { s.maxAttempts = max(n, 1) } }

// New returns a client of the functions at endpoints. Without WithHTTPClient or WithTokenSource it
// makes an ID token source from Application Default Credentials for each URL (its audience); that
// fails for credentials that cannot make ID tokens (a user's gcloud login: use a service account,
// or impersonate one).
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
			if ts, err = idtoken.NewTokenSource(ctx, url); err != nil {
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
	hc.Transport = &oauth2.Transport{Source: oauth2.ReuseTokenSource(nil, ts), Base: base.Transport}
	return &hc
}

// errNoURL is the error of a call to a function whose URL was not given.
var errNoURL = errors.New("no URL given for this function (Endpoints)")
