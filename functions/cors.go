package functions

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/shardcount/counters/shared/wire"
)

// The CORS protocol's headers (the Fetch standard).
const (
	headerOrigin        = "Origin"
	headerRequestMethod = "Access-Control-Request-Method"
	headerAllowOrigin   = "Access-Control-Allow-Origin"
	headerAllowMethods  = "Access-Control-Allow-Methods"
	headerAllowHeaders  = "Access-Control-Allow-Headers"
	headerExposeHeaders = "Access-Control-Expose-Headers"
	headerMaxAge        = "Access-Control-Max-Age"
	headerVary          = "Vary"
	corsPreflightMaxAge = 3600 // seconds a browser may reuse a preflight's answer
)

// corsRequestHeaders are the request headers the API reads, which pages may send.
var corsRequestHeaders = strings.Join([]string{"Content-Type", headerAuthorization, wire.HeaderIdempotencyKey, headerAppCheck}, ", ")

// corsExposedHeaders are the answer headers beyond the CORS-safelisted ones that clients act on.
var corsExposedHeaders = strings.Join([]string{"Retry-After", "WWW-Authenticate", headerReplayed}, ", ")

// crossOrigin serves method to pages of ALLOWED_ORIGINS (CORS), answering preflights itself (204,
// CORS headers only for listed origins). See docs/api.md, "Browsers (CORS)".
func crossOrigin(method func(*Service, http.ResponseWriter, *http.Request), methods ...string) func(*Service, http.ResponseWriter, *http.Request) {
	allowMethods := strings.Join(methods, ", ")
	return func(s *Service, w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if len(s.origins) > 0 {
			h.Add(headerVary, headerOrigin)
		}
		origins := r.Header.Values(headerOrigin)
		listed := len(origins) == 1 && s.origins[origins[0]]
		if listed {
			h.Set(headerAllowOrigin, origins[0])
		}
		if r.Method == http.MethodOptions && len(origins) > 0 && r.Header.Get(headerRequestMethod) != "" {
			if listed {
				h.Set(headerAllowMethods, allowMethods)
				h.Set(headerAllowHeaders, corsRequestHeaders)
				h.Set(headerMaxAge, strconv.Itoa(corsPreflightMaxAge))
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if listed {
			h.Set(headerExposeHeaders, corsExposedHeaders)
		}
		method(s, w, r)
	}
}
