package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions/eventhttp"
)

// errMainMissing fails an event whose main document does not exist yet, for redelivery.
var errMainMissing = errors.New("main document does not exist yet; its shards wait")

// FoldExtensionShards is the CloudEvent entry point for firestore-counter extension shard writes: a
// fold of the main document follows within about EXTENSION_FOLD_INTERVAL, for documents that
// EXTENSION_FOLDS declares (docs/migrate-from-firestore-counter.md).
func (h *foldHandler) FoldExtensionShards(ctx context.Context, e event.Event) error {
	path, underDocuments := strings.CutPrefix(e.Subject(), "documents/")
	doc, ok := extshards.MainDocument(path)
	if !underDocuments || !ok {
		h.log.ErrorContext(ctx, "event subject is not an extension shard document; event dropped",
			"event_id", e.ID(), "subject", e.Subject(), "type", e.Type(), "want_pattern", ExtensionShardsPattern)
		return nil
	}
	if !h.folder.Declares(doc) {
		h.log.WarnContext(ctx, "extension shard under a document that EXTENSION_FOLDS does not declare; not folded",
			"event", EventFoldError, "kind", "not_declared", "document", doc, "event_id", e.ID())
		return nil
	}
	written, err := eventhttp.WrittenDocument(e.Data())
	if err != nil {
		// Unreadable: fold, which is always safe.
		h.log.WarnContext(ctx, "event data is not a DocumentEventData; folding anyway", "event_id", e.ID(), "error", err.Error())
	} else if !extshards.NeedsFold(written) {
		return nil
	}
	logCtx := context.WithoutCancel(ctx)
	logWaiting := func(res extshards.Result, attrs []slog.Attr) {
		if res.Dropped > 0 {
			h.log.LogAttrs(logCtx, slog.LevelWarn, "extension shards of a missing document deleted uncounted after waiting 24 h",
				append(attrs, slog.String("event", EventFoldWaiting), slog.String("kind", "dropped"), slog.Int("shards", res.Dropped))...)
		}
		if res.Waiting > 0 {
			h.log.LogAttrs(logCtx, slog.LevelWarn, "extension shards wait for their main document",
				append(attrs, slog.String("event", EventFoldWaiting), slog.String("kind", "waiting"), slog.Int("shards", res.Waiting))...)
		}
	}
	attrs := []slog.Attr{slog.String("document", doc), slog.String("event_id", e.ID())}
	exists, err := h.folder.Exists(ctx, doc)
	if err != nil {
		return eventResult(ctx, h.log, e, err, "fold extension shards", slog.String("document", doc))
	}
	if !exists {
		// Fold anyway: it deletes shards that waited too long.
		res, err := h.folder.Fold(ctx, doc)
		if err != nil {
			return eventResult(ctx, h.log, e, err, "fold extension shards", slog.String("document", doc))
		}
		logWaiting(res, attrs)
		if res.Waiting > 0 {
			return fmt.Errorf("fold extension shards of %q: %w", doc, errMainMissing)
		}
		return nil
	}
	carried, err := h.folder.Notify(ctx, doc, func(res extshards.Result, err error) {
		logWaiting(res, attrs)
		for _, skipped := range res.Skipped {
			h.log.LogAttrs(logCtx, slog.LevelError, "extension shard left unfolded", append(attrs, slog.String("event", EventFoldError),
				slog.String("kind", "shard_left_unfolded"), slog.String("error", skipped.Error()))...)
		}
		if err != nil {
			h.log.LogAttrs(logCtx, slog.LevelError, "fold extension shards failed; the shards wait for their next write",
				append(attrs, slog.String("event", EventFoldError), slog.String("kind", "fold_failed"), slog.String("error", err.Error()))...)
		}
	})
	return eventResult(ctx, h.log, e, err, "fold extension shards", slog.String("document", doc), slog.Bool("carried", carried))
}
