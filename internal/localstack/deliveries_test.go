package localstack

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"
)

// TestDeliveryLogKeepsTheLatestRecordsInOrder: past maxDeliveryRecords the oldest records give way,
// /deliveries answers the rest oldest first and filtered by prefix, and an update of a record
// already overwritten changes nothing.
func TestDeliveryLogKeepsTheLatestRecordsInOrder(t *testing.T) {
	var l deliveryLog
	written := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	const extra = 3
	for i := range maxDeliveryRecords + extra {
		doc := fmt.Sprintf("other/%d", i)
		if i%2 == 0 {
			doc = fmt.Sprintf("counters/c/shards/%d", i)
		}
		seq := l.received(doc, written)
		if seq != uint64(i) {
			t.Fatalf("record %d got sequence %d", i, seq)
		}
	}
	l.reached(0) // overwritten
	l.reached(maxDeliveryRecords + 2)
	l.answered(maxDeliveryRecords + 2)
	l.settled(maxDeliveryRecords+2, 3)

	w := httptest.NewRecorder()
	l.serve(w, httptest.NewRequest("GET", "/deliveries?prefix=counters/c/", nil))
	var got []DeliveryRecord
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != maxDeliveryRecords/2 {
		t.Fatalf("%d records under counters/c/, want %d", len(got), maxDeliveryRecords/2)
	}
	if first, last := got[0], got[len(got)-1]; first.Document != "counters/c/shards/4" || last.Document != fmt.Sprintf("counters/c/shards/%d", maxDeliveryRecords+2) {
		t.Errorf("records from %s to %s, want from counters/c/shards/4 (the oldest kept) to the latest", first.Document, last.Document)
	}
	if last := got[len(got)-1]; last.Reached.IsZero() || last.Answered.Before(last.Reached) || last.Settled.Before(last.Answered) || last.Attempts != 3 || !last.Written.Equal(written) {
		t.Errorf("latest record %+v, want written, reached, answered and settled after 3 attempts", last)
	}
	if !got[0].Reached.IsZero() {
		t.Errorf("oldest kept record %+v was marked reached by an update of the record it replaced", got[0])
	}
}
