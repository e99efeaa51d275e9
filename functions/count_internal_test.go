package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/rollup"
)

// TestCountNeverShowsARollupAheadOfTheExactValue: between Count's two reads, the counter gains 5
// and its roll-up is written; the answer's roll-up is never ahead of its exact count.
func TestCountNeverShowsARollupAheadOfTheExactValue(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.RollupInterval = 100 * time.Millisecond
	s := NewService(cfg, testenv.Firestore(t), cloudlog.New(io.Discard, slog.LevelError))
	id := testenv.UniqueID("ahead")
	increment := func(n int) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/Increment", strings.NewReader(fmt.Sprintf(`{"counter":%q,"delta":%d}`, id, n)))
		req.Header.Set("Content-Type", "application/json")
		s.Increment(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("increment: %d %s", rec.Code, rec.Body)
		}
		if _, err := s.rollups.engine.Refresh(ctx, id, time.Now(), rollup.SourceTrigger); err != nil {
			t.Fatal(err)
		}
	}
	increment(1)
	s.reads.betweenCountReads = func(string) { increment(5) }
	rec := httptest.NewRecorder()
	s.Count(rec, httptest.NewRequest(http.MethodGet, "/Count?counter="+id, nil))
	var got countResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK || got.Rollup == nil {
		t.Fatalf("count: %d %s", rec.Code, rec.Body)
	}
	if got.Rollup.Count > got.Count {
		t.Errorf("count %d with a roll-up of %d: the roll-up is ahead of the exact value", got.Count, got.Rollup.Count)
	}
	t.Logf("answer: %s", rec.Body)
}
