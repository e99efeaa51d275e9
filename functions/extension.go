package functions

import (
	"context"
	"log/slog"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions/eventhttp"
)

// FoldExtensionShards is the CloudEvent entry point for google.cloud.firestore.document.v1.written
// on the firestore-counter extension's shards (ExtensionShardsPattern): it makes sure a fold of the
// written shard's main document that reads the shards after this write follows, within about one
// EXTENSION_FOLD_INTERVAL (extshards.Folder.Fold). The event is answered at once; the fold runs in
// this instance while one event at a time, the carrier, waits for the instance's folds (see
// extshards.Folder.Notify). Events of documents that hold nothing to fold (deletes, shards a fold
// emptied) are acknowledged without a fold.
func (s *Service) FoldExtensionShards(ctx context.Context, e event.Event) error {
	path, underDocuments := strings.CutPrefix(e.Subject(), "documents/")
	doc, ok := extshards.MainDocument(path)
	if !underDocuments || !ok {
		s.log.ErrorContext(ctx, "event subject is not an extension shard document; event dropped",
			"event_id", e.ID(), "subject", e.Subject(), "type", e.Type(), "want_pattern", ExtensionShardsPattern)
		return nil
	}
	written, err := eventhttp.WrittenDocument(e.Data())
	if err != nil {
		// A body we cannot read says nothing either way: fold, which is always safe.
		s.log.WarnContext(ctx, "event data is not a DocumentEventData; folding anyway", "event_id", e.ID(), "error", err.Error())
	} else if !extshards.NeedsFold(written) {
		return nil
	}
	logCtx := context.WithoutCancel(ctx)
	carried, err := s.folder.Notify(ctx, doc, func(res extshards.Result, err error) {
		attrs := []slog.Attr{slog.String("document", doc), slog.String("event_id", e.ID())}
		if res.Dropped > 0 {
			s.log.LogAttrs(logCtx, slog.LevelWarn, "extension shards of a missing document deleted uncounted",
				append(attrs, slog.Int("dropped", res.Dropped))...)
		}
		for _, skipped := range res.Skipped {
			s.log.LogAttrs(logCtx, slog.LevelError, "extension shard left unfolded", append(attrs, slog.String("event", EventFoldError),
				slog.String("kind", "shard_left_unfolded"), slog.String("error", skipped.Error()))...)
		}
		if err != nil {
			s.log.LogAttrs(logCtx, slog.LevelError, "fold extension shards failed; the shards wait for their next write",
				append(attrs, slog.String("event", EventFoldError), slog.String("kind", "fold_failed"), slog.String("error", err.Error()))...)
		}
	})
	return s.eventResult(ctx, e, err, "fold extension shards", slog.String("document", doc), slog.Bool("carried", carried))
}
