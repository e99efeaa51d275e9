package functions

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shardcount/counters/functions/config"
)

const (
	listedOrigin   = "https://app.example.com"
	unlistedOrigin = "https://evil.example.net"
)

// corsService is a Service with ALLOWED_ORIGINS set to origins and no database: enough for what
// crossOrigin answers itself, and for refusals that precede any database call.
func corsService(t *testing.T, origins string) *Service {
	t.Helper()
	cfg, err := config.Parse(func(name string) (string, bool) {
		return origins, name == "ALLOWED_ORIGINS"
	})
	if err != nil {
		t.Fatal(err)
	}
	return NewService(cfg, nil, nil)
}

// accessControl lists the Access-Control-* headers of h, one "Name: value" each.
func accessControl(h http.Header) []string {
	var found []string
	for name, values := range h {
		if strings.HasPrefix(name, "Access-Control-") {
			found = append(found, name+": "+strings.Join(values, ","))
		}
	}
	return found
}

// TestPreflightsAreAnsweredForListedOriginsOnly: a preflight to a browser-callable entry point is
// answered 204 without reaching it, with the CORS headers for a listed origin (its methods, the
// API's request headers, a max age, Vary: Origin) and none for any other; ConfigureCounter, the admin
// function, answers no preflight (405 without CORS headers).
func TestPreflightsAreAnsweredForListedOriginsOnly(t *testing.T) {
	tests := []struct {
		name, entry, allowed, origin string
		wantStatus                   int
		wantMethods                  string // "" means no CORS headers at all
		wantVary                     bool
	}{
		{"Increment, listed", EntryIncrement, listedOrigin + " http://localhost:5173", listedOrigin, http.StatusNoContent, "POST", true},
		{"Increment, second listed", EntryIncrement, listedOrigin + " http://localhost:5173", "http://localhost:5173", http.StatusNoContent, "POST", true},
		{"Count, listed", EntryCount, listedOrigin, listedOrigin, http.StatusNoContent, "GET, HEAD", true},
		{"Top, listed", EntryTop, listedOrigin, listedOrigin, http.StatusNoContent, "GET, HEAD", true},
		{"Increment, unlisted", EntryIncrement, listedOrigin, unlistedOrigin, http.StatusNoContent, "", true},
		{"Increment, listed but another case", EntryIncrement, listedOrigin, strings.ToUpper(listedOrigin), http.StatusNoContent, "", true},
		{"Increment, listed with a trailing slash", EntryIncrement, listedOrigin, listedOrigin + "/", http.StatusNoContent, "", true},
		{"Increment, null origin", EntryIncrement, listedOrigin, "null", http.StatusNoContent, "", true},
		{"Increment, none allowed", EntryIncrement, "", listedOrigin, http.StatusNoContent, "", false},
		{"Count, none allowed", EntryCount, "", listedOrigin, http.StatusNoContent, "", false},
		{"ConfigureCounter, listed", EntryConfigureCounter, listedOrigin, listedOrigin, http.StatusMethodNotAllowed, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := corsService(t, tt.allowed)
			req := httptest.NewRequest(http.MethodOptions, "/"+tt.entry, strings.NewReader(`{"counter":"likes"}`))
			req.Header.Set("Origin", tt.origin)
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,idempotency-key,x-firebase-appcheck")
			rec := httptest.NewRecorder()
			served[tt.entry](s, rec, req)

			if rec.Code != tt.wantStatus {
				t.Errorf("status %d, want %d; body %q", rec.Code, tt.wantStatus, rec.Body)
			}
			h := rec.Header()
			if got := h.Values("Vary"); tt.wantVary != (len(got) == 1 && got[0] == "Origin") {
				t.Errorf("Vary = %q, want Origin: %t", got, tt.wantVary)
			}
			if tt.wantMethods == "" {
				if found := accessControl(h); len(found) > 0 {
					t.Errorf("answered with CORS headers %q, want none", found)
				}
				if tt.wantStatus == http.StatusNoContent && rec.Body.Len() > 0 {
					t.Errorf("a refused preflight wrote %q, want nothing", rec.Body)
				}
				return
			}
			if rec.Body.Len() > 0 {
				t.Errorf("body %q, want none", rec.Body)
			}
			want := map[string]string{
				"Access-Control-Allow-Origin":  tt.origin,
				"Access-Control-Allow-Methods": tt.wantMethods,
				"Access-Control-Allow-Headers": "Content-Type, Authorization, Idempotency-Key, X-Firebase-AppCheck",
				"Access-Control-Max-Age":       "3600",
			}
			for name, w := range want {
				if got := h.Values(name); len(got) != 1 || got[0] != w {
					t.Errorf("%s = %q, want %q", name, got, w)
				}
			}
			if got := h.Get("Access-Control-Allow-Credentials"); got != "" {
				t.Errorf("Access-Control-Allow-Credentials = %q: tokens travel in headers, never cookies", got)
			}
		})
	}
}

// TestAnswersCarryCORSHeadersForListedOriginsOnly: every request that is not a preflight reaches the
// entry point; its answer carries Access-Control-Allow-Origin and the exposed headers for a listed
// origin only, and Vary: Origin whenever any origin is listed.
func TestAnswersCarryCORSHeadersForListedOriginsOnly(t *testing.T) {
	tests := []struct {
		name, allowed, method string
		origins               []string
		preflightHeader       bool
		wantAllowed           bool
		wantVary              bool
	}{
		{"POST, listed", listedOrigin, http.MethodPost, []string{listedOrigin}, false, true, true},
		{"GET, listed", listedOrigin, http.MethodGet, []string{listedOrigin}, false, true, true},
		{"POST, unlisted", listedOrigin, http.MethodPost, []string{unlistedOrigin}, false, false, true},
		{"POST, no Origin", listedOrigin, http.MethodPost, nil, false, false, true},
		{"POST, two Origin headers", listedOrigin, http.MethodPost, []string{listedOrigin, unlistedOrigin}, false, false, true},
		{"OPTIONS without Access-Control-Request-Method is no preflight", listedOrigin, http.MethodOptions, []string{listedOrigin}, false, true, true},
		{"OPTIONS without Origin is no preflight", listedOrigin, http.MethodOptions, nil, true, false, true},
		{"POST, none allowed", "", http.MethodPost, []string{listedOrigin}, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := corsService(t, tt.allowed)
			reached := 0
			entry := crossOrigin(func(_ *Service, w http.ResponseWriter, _ *http.Request) {
				reached++
				w.Header().Set("Retry-After", "1")
				writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "retry"})
			}, http.MethodPost)
			req := httptest.NewRequest(tt.method, "/"+EntryIncrement, nil)
			for _, o := range tt.origins {
				req.Header.Add("Origin", o)
			}
			if tt.preflightHeader {
				req.Header.Set("Access-Control-Request-Method", "POST")
			}
			rec := httptest.NewRecorder()
			entry(s, rec, req)

			if reached != 1 {
				t.Fatalf("the entry point was reached %d times, want once", reached)
			}
			h := rec.Header()
			if got := h.Values("Vary"); tt.wantVary != (len(got) == 1 && got[0] == "Origin") {
				t.Errorf("Vary = %q, want Origin: %t", got, tt.wantVary)
			}
			if !tt.wantAllowed {
				if found := accessControl(h); len(found) > 0 {
					t.Errorf("answered with CORS headers %q, want none", found)
				}
				return
			}
			if got := h.Get("Access-Control-Allow-Origin"); got != tt.origins[0] {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, tt.origins[0])
			}
			if got, want := h.Get("Access-Control-Expose-Headers"), "Retry-After, WWW-Authenticate, Idempotent-Replayed"; got != want {
				t.Errorf("Access-Control-Expose-Headers = %q, want %q", got, want)
			}
			for _, preflightOnly := range []string{"Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age"} {
				if got := h.Get(preflightOnly); got != "" {
					t.Errorf("%s = %q on an answer that is no preflight's", preflightOnly, got)
				}
			}
		})
	}
}
