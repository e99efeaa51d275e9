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
// on the firestore-counter extension's shards (ExtensionShardsPattern): it folds the shards of the
// written shard's main document into it (extshards.Folder.Fold) and returns once a fold that read
// the shards after this write is committed, within about one EXTENSION_FOLD_INTERVAL. Events of
// documents that hold nothing to fold (deletes, shards a fold emptied) are acknowledged at once.
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
	res, err := s.folder.Fold(ctx, doc)
	return s.eventResult(ctx, e, err, "fold extension shards", slog.String("document", doc),
		slog.Int("shards", res.Shards), slog.Int("writes", res.Writes))
}
