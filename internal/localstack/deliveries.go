package localstack

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"
)

// maxDeliveryRecords bounds the latest events GET /deliveries remembers.
const maxDeliveryRecords = 100_000

// DeliveryRecord is one Firestore event's times: its document written, received by the bridge, its
// first attempt begun (Reached; zero while waiting) and answered, and its last attempt answered
// (Settled: acknowledged or given up; zero while it is retried), after Attempts attempts.
type DeliveryRecord struct {
	Document string    `json:"document"` // counters/likes/shards/3
	Written  time.Time `json:"written"`
	Received time.Time `json:"received"`
	Reached  time.Time `json:"reached"`
	Answered time.Time `json:"answered"`
	Settled  time.Time `json:"settled"`
	Attempts int       `json:"attempts"`
}

// deliveryLog keeps the latest maxDeliveryRecords records, in order received.
type deliveryLog struct {
	mu      sync.Mutex
	records []DeliveryRecord
	next    uint64 // the next record's sequence number; record n is at records[n%max]
}

// received records an event received now and returns its sequence number.
func (l *deliveryLog) received(document string, written time.Time) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := DeliveryRecord{Document: document, Written: written, Received: time.Now()}
	if len(l.records) < maxDeliveryRecords {
		l.records = append(l.records, r)
	} else {
		l.records[l.next%maxDeliveryRecords] = r
	}
	l.next++
	return l.next - 1
}

// reached records that event seq reached its function now.
func (l *deliveryLog) reached(seq uint64) {
	l.update(seq, func(r *DeliveryRecord) { r.Reached = time.Now() })
}

// answered records that event seq's first attempt was answered now.
func (l *deliveryLog) answered(seq uint64) {
	l.update(seq, func(r *DeliveryRecord) {
		if r.Answered.IsZero() {
			r.Answered = time.Now()
		}
	})
}

// settled records that event seq's delivery ended now, after attempts attempts.
func (l *deliveryLog) settled(seq uint64, attempts int) {
	l.update(seq, func(r *DeliveryRecord) { r.Settled, r.Attempts = time.Now(), attempts })
}

// update applies f to record seq, unless it was overwritten since.
func (l *deliveryLog) update(seq uint64, f func(*DeliveryRecord)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next-seq <= uint64(len(l.records)) {
		f(&l.records[seq%maxDeliveryRecords])
	}
}

// serve answers GET /deliveries?prefix=P with the records under P, oldest first.
func (l *deliveryLog) serve(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("prefix")
	l.mu.Lock()
	out := []DeliveryRecord{}
	n := uint64(len(l.records))
	for seq := l.next - n; seq < l.next; seq++ {
		if rec := l.records[seq%maxDeliveryRecords]; strings.HasPrefix(rec.Document, prefix) {
			out = append(out, rec)
		}
	}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
