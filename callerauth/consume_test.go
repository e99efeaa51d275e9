package callerauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestConsumeReadsTheAPIsAnswer: consume sends the token as the Admin SDK does and reads
// alreadyConsumed (absent: a first use); a consumed token is Replayed, and any answer that is not a
// verdict (an error status, a non-boolean alreadyConsumed, no server) is the platform's.
func TestConsumeReadsTheAPIsAnswer(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
		want   func(error) bool
	}{
		{"first use, field absent", http.StatusOK, `{}`, func(err error) bool { return err == nil }},
		{"first use", http.StatusOK, `{"alreadyConsumed":false}`, func(err error) bool { return err == nil }},
		{"replayed", http.StatusOK, `{"alreadyConsumed":true}`, func(err error) bool {
			var e *TokenError
			return errors.As(err, &e) && e.Kind == AppCheckToken && e.Reason == Replayed
		}},
		{"permission denied", http.StatusForbidden, `{"error":{"status":"PERMISSION_DENIED"}}`, unavailable},
		{"not a boolean", http.StatusOK, `{"alreadyConsumed":"yes"}`, unavailable},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				Token string `json:"app_check_token"`
			}
			if r.Method != http.MethodPost || r.URL.Path != "/v1beta/projects/demo-p:verifyAppCheckToken" ||
				r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&body) != nil || body.Token != "tok" {
				http.Error(w, "unexpected request", http.StatusBadRequest)
				return
			}
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(c.body))
		}))
		consumer, err := newTokenConsumer(context.Background(), "demo-p", srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if err := consumer.consume(context.Background(), "tok"); !c.want(err) {
			t.Errorf("%s: %v", c.name, err)
		}
		srv.Close()
		if err := consumer.consume(context.Background(), "tok"); !unavailable(err) {
			t.Errorf("%s, then the API gone: %v, want unavailable", c.name, err)
		}
	}
}

func unavailable(err error) bool {
	var e *UnavailableError
	return errors.As(err, &e) && e.Kind == AppCheckToken
}
