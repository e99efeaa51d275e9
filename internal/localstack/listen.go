package localstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	firestoreapi "cloud.google.com/go/firestore/apiv1"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/shardcount/counters/functions/eventhttp"
)

// Document events from the Firestore emulator's listen stream (docs/development.md says why not its
// --functions_emulator webhook): one collection-group listen target per Firestore trigger, whose
// document changes become the events Eventarc would send, computed against the previous version the
// watch saw.

// documentWatch turns one trigger's document changes into events for the bridge.
type documentWatch struct {
	bridge *EventBridge
	// database is projects/P/databases/(default); group the collection ID the trigger's pattern ends in.
	database, group string
	// pattern is the trigger's document path pattern, split at "/"; eventType its CloudEvent type;
	// target the function's URL.
	pattern           []string
	eventType, target string
	// known is the latest version of every matching document the watch has seen, by full name.
	known map[string]*firestorepb.Document
}

// watchTriggerDocuments starts a watch of the documents of the trigger pattern (its last collection
// ID must be a literal), delivering their events to target until ctx ends.
func (b *EventBridge) watchTriggerDocuments(ctx context.Context, client *firestoreapi.Client, project, eventType, pattern, target string) error {
	segs := strings.Split(pattern, "/")
	if len(segs) < 2 || strings.HasPrefix(segs[len(segs)-2], "{") {
		return fmt.Errorf("trigger pattern %q: its last collection must be named, not a wildcard", pattern)
	}
	w := &documentWatch{
		bridge:    b,
		database:  "projects/" + project + "/databases/(default)",
		group:     segs[len(segs)-2],
		pattern:   segs,
		eventType: eventType,
		target:    target,
		known:     make(map[string]*firestorepb.Document),
	}
	go w.run(ctx, client)
	return nil
}

// dialFirestore is a Firestore API client of the emulator at addr, with the emulator's admin
// credentials (as cloud.google.com/go/firestore's own emulator connection has).
func dialFirestore(ctx context.Context, addr string) (*firestoreapi.Client, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulatorOwner{}), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		return nil, fmt.Errorf("dial the Firestore emulator: %w", err)
	}
	c, err := firestoreapi.NewClient(ctx, option.WithGRPCConn(conn))
	if err != nil {
		return nil, fmt.Errorf("Firestore API client: %w", err)
	}
	return c, nil
}

// emulatorOwner authenticates as the Firestore emulator's admin ("Bearer owner").
type emulatorOwner struct{}

func (emulatorOwner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}
func (emulatorOwner) RequireTransportSecurity() bool { return false }

// run listens until ctx ends, listening again after a broken stream.
func (w *documentWatch) run(ctx context.Context, client *firestoreapi.Client) {
	for ctx.Err() == nil {
		err := w.listen(ctx, client)
		if ctx.Err() != nil {
			return
		}
		fmt.Fprintf(w.bridge.log, "event bridge: listen stream of %s ended (%v); listening again\n", w.group, err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
}

// listen runs one listen stream. Each stream starts with the matching documents as they are now,
// then every change. Until the target is current, documents are compared with known, so a stream that
// starts again delivers what changed while none listened (including deletes), and no more.
func (w *documentWatch) listen(ctx context.Context, client *firestoreapi.Client) error {
	ctx = metadata.AppendToOutgoingContext(ctx, "google-cloud-resource-prefix", w.database)
	stream, err := client.Listen(ctx)
	if err != nil {
		return err
	}
	const targetID = 1
	err = stream.Send(&firestorepb.ListenRequest{
		Database: w.database,
		TargetChange: &firestorepb.ListenRequest_AddTarget{AddTarget: &firestorepb.Target{
			TargetId: targetID,
			TargetType: &firestorepb.Target_Query{Query: &firestorepb.Target_QueryTarget{
				Parent: w.database + "/documents",
				QueryType: &firestorepb.Target_QueryTarget_StructuredQuery{StructuredQuery: &firestorepb.StructuredQuery{
					From: []*firestorepb.StructuredQuery_CollectionSelector{{CollectionId: w.group, AllDescendants: true}},
				}},
			}},
		}},
	})
	if err != nil {
		return err
	}
	current, seen := false, map[string]bool{}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		switch r := resp.ResponseType.(type) {
		case *firestorepb.ListenResponse_DocumentChange:
			doc := r.DocumentChange.GetDocument()
			if slices.Contains(r.DocumentChange.GetTargetIds(), targetID) {
				if seen != nil {
					seen[doc.GetName()] = true
				}
				w.changed(doc.GetName(), doc, time.Time{})
			} else if slices.Contains(r.DocumentChange.GetRemovedTargetIds(), targetID) {
				w.changed(doc.GetName(), nil, time.Time{})
			}
		case *firestorepb.ListenResponse_DocumentDelete:
			w.changed(r.DocumentDelete.GetDocument(), nil, r.DocumentDelete.GetReadTime().AsTime())
		case *firestorepb.ListenResponse_DocumentRemove:
			w.changed(r.DocumentRemove.GetDocument(), nil, r.DocumentRemove.GetReadTime().AsTime())
		case *firestorepb.ListenResponse_TargetChange:
			tc := r.TargetChange
			switch {
			case tc.GetTargetChangeType() == firestorepb.TargetChange_RESET:
				current, seen = false, map[string]bool{}
			case tc.GetTargetChangeType() == firestorepb.TargetChange_CURRENT:
				current = true
			case tc.GetTargetChangeType() == firestorepb.TargetChange_NO_CHANGE && len(tc.GetTargetIds()) == 0 && current && seen != nil:
				// The first consistent snapshot: what known holds and the stream did not send is gone.
				for name := range w.known {
					if !seen[name] {
						w.changed(name, nil, tc.GetReadTime().AsTime())
					}
				}
				seen = nil
			case tc.GetTargetChangeType() == firestorepb.TargetChange_REMOVE:
				return fmt.Errorf("target removed: %v", tc.GetCause())
			}
		}
	}
}

// changed records that the document name is now doc (nil: deleted, noticed at deletedAt or, when
// zero, now) and, unless that is the version known already, queues its event.
func (w *documentWatch) changed(name string, doc *firestorepb.Document, deletedAt time.Time) {
	old := w.known[name]
	if doc == nil && old == nil || doc != nil && old != nil && proto.Equal(doc.GetUpdateTime(), old.GetUpdateTime()) {
		return
	}
	if doc == nil {
		delete(w.known, name)
	} else {
		w.known[name] = doc
	}
	path := strings.TrimPrefix(name, w.database+"/documents/")
	if !matchPattern(w.pattern, strings.Split(path, "/")) {
		return
	}
	at := time.Now()
	if doc != nil {
		at = doc.GetUpdateTime().AsTime()
	} else if deletedAt.Unix() > 0 {
		at = deletedAt
	}
	req, body, err := documentEventRequest(w.eventType, w.target, w.database, path, doc, old, at)
	if err != nil {
		fmt.Fprintf(w.bridge.log, "event bridge: event of %s: %v\n", path, err)
		return
	}
	w.bridge.enqueue(req, body, path, doc)
}

// updateMask lists the top-level fields an update changed: added, removed or with another value.
func updateMask(doc, old *firestorepb.Document) []string {
	if doc == nil || old == nil {
		return nil
	}
	var mask []string
	for k, v := range doc.GetFields() {
		if !proto.Equal(v, old.GetFields()[k]) {
			mask = append(mask, k)
		}
	}
	for k := range old.GetFields() {
		if _, ok := doc.GetFields()[k]; !ok {
			mask = append(mask, k)
		}
	}
	slices.Sort(mask)
	return mask
}

// matchPattern reports whether the document path segments match an Eventarc path pattern: {x}
// matches one segment, {x=**} any number of them, anything else itself.
func matchPattern(pattern, path []string) bool {
	if len(pattern) == 0 {
		return len(path) == 0
	}
	p := pattern[0]
	if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "=**}") {
		for i := 0; i <= len(path); i++ {
			if matchPattern(pattern[1:], path[i:]) {
				return true
			}
		}
		return false
	}
	if len(path) == 0 || !(strings.HasPrefix(p, "{") || p == path[0]) {
		return false
	}
	return matchPattern(pattern[1:], path[1:])
}

// eventID is a new CloudEvent ID.
func eventID() string {
	b := make([]byte, 12)
	_, _ = io.ReadFull(rand.Reader, b)
	return hex.EncodeToString(b)
}

// documentEventRequest is the binary-mode CloudEvent Eventarc sends for a write of the document at
// path (doc after it, nil for a delete; old before it, nil for a create) to target.
func documentEventRequest(eventType, target, database, path string, doc, old *firestorepb.Document, at time.Time) (*http.Request, []byte, error) {
	body, err := eventhttp.DocumentEventData(doc, old, updateMask(doc, old))
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, target, nil)
	if err != nil {
		return nil, nil, err
	}
	project := strings.Split(database, "/")[1]
	for k, v := range map[string]string{
		"Content-Type":   "application/protobuf",
		"Ce-Specversion": "1.0",
		"Ce-Id":          eventID(),
		"Ce-Type":        eventType,
		"Ce-Source":      "//firestore.googleapis.com/" + database,
		"Ce-Subject":     "documents/" + path,
		"Ce-Time":        at.UTC().Format(time.RFC3339Nano),
		"Ce-Dataschema":  "https://github.com/googleapis/google-cloudevents/blob/main/proto/google/events/cloud/firestore/v1/data.proto",
		"Ce-Location":    "nam5",
		"Ce-Project":     project,
		"Ce-Database":    "(default)",
		"Ce-Namespace":   "(default)",
		"Ce-Document":    path,
	} {
		req.Header.Set(k, v)
	}
	return req, body, nil
}
