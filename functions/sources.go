package functions

import (
	"context"
	"log/slog"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/sources"
)

// CountDocumentWrite is the CloudEvent entry point for writes to COUNTER_SOURCES documents: it
// counts each write exactly once on every counter declaring it; a probe document's write
// (sources.Counting.SeeProbe) it records as seen and counts nowhere. An unreadable event is logged
// and acknowledged; other failures ask for redelivery.
func (h *documentHandler) CountDocumentWrite(ctx context.Context, e event.Event) error {
	path, ok := strings.CutPrefix(e.Subject(), "documents/")
	value, old, err := eventhttp.Documents(e.Data())
	if !ok || err != nil || value == nil && old == nil {
		h.log.ErrorContext(ctx, "event is not a document write; event dropped", "event_id", e.ID(), "subject", e.Subject(), "type", e.Type(), "error", errString(err))
		return nil
	}
	w := sources.Write{Path: path, Old: old, New: value, Time: e.Time()}
	if probe, err := h.counting.SeeProbe(ctx, canaryRecords(h.counting, h.schema), w); probe {
		return eventResult(ctx, h.log, e, err, "record a collection trigger's probe", slog.String("document", path))
	}
	t, err := h.counting.Count(ctx, w)
	attrs := []any{"event_id", e.ID(), "document", path, "counted", t.Counted, "duplicate", t.Duplicate, "in_base", t.InBase, "out_of_range", t.OutOfRange}
	if err != nil {
		h.log.WarnContext(ctx, "count document write failed; asking for redelivery", append(attrs, "error", err.Error())...)
		return err
	}
	for _, why := range t.Refused {
		h.log.ErrorContext(ctx, "document maps to a counter its declaration did not create; not counted there", "event", EventCollectionRefused,
			"event_id", e.ID(), "document", path, "error", why)
	}
	h.log.Log(ctx, slog.LevelDebug, "document write counted", attrs...)
	return nil
}

// errString is err's message, or "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
