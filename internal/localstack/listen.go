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
	"sync"
	"time"

	firestoreapi "cloud.google.com/go/firestore/apiv1"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/counters/functions/eventhttp"
)

// Document events from the emulator's listen stream: each matching document gets a target of its
// own (a query target resends the whole group), found by repeated names-only queries. See
// docs/development.md, "The local stack".

// discoveryPeriod is the least pause between discovery queries; discoveryShare caps the share of
// the emulator's time they take, judged by the median of the last discoveryRecent queries (one
// slowed by a burst of load would pause discovery for four times as long). A document's first write
// may be late by a query and a pause.
const (
	discoveryPeriod = 200 * time.Millisecond
	discoveryShare  = 0.2
	discoveryRecent = 5
)

// discoveryPause is the pause after queries that took recent (the last discoveryRecent, oldest
// first).
func discoveryPause(recent []time.Duration) time.Duration {
	sorted := slices.Sorted(slices.Values(recent))
	median := sorted[len(sorted)/2]
	return max(discoveryPeriod, time.Duration(float64(median)*(1/discoveryShare-1)))
}

// slowDiscovery is a discovery query's duration from which the bridge logs it.
const slowDiscovery = time.Second

// documentWatch turns one trigger's document changes into events for the bridge.
type documentWatch struct {
	bridge *EventBridge
	client *firestoreapi.Client
	// database is projects/P/databases/D; group the pattern's last collection ID.
	database, group string
	// pattern is split at "/"; target is the function's URL.
	pattern           []string
	eventType, target string
	// exactOld reads each event's old value just before the change, as Eventarc does, rather than
	// using the version seen last.
	exactOld bool

	ctx context.Context
	// mu guards groups and isWatched.
	mu        sync.Mutex
	groups    []*targetGroup
	isWatched map[string]bool
}

// targetsPerStream bounds a listen stream's targets: the emulator's larger streams broke under load.
const targetsPerStream = 100

// targetGroup is one listen stream and the documents it watches.
type targetGroup struct {
	w *documentWatch
	// mu guards stream (nil between streams) and names (target i+1 is names[i]).
	mu     sync.Mutex
	stream firestorepb.Firestore_ListenClient
	names  []string
	// known is the latest version shown of each document; the stream's goroutine alone uses it.
	known map[string]*firestorepb.Document
}

// databaseName is the resource name of project's Firestore database.
func databaseName(project, database string) string {
	return "projects/" + project + "/databases/" + database
}

// watchTriggerDocuments delivers the events of the documents of database (a databaseName) matching
// pattern (whose last collection ID must be literal) to target until ctx ends.
func (b *EventBridge) watchTriggerDocuments(ctx context.Context, client *firestoreapi.Client, database, eventType, pattern, target string, exactOld bool) error {
	segs := strings.Split(pattern, "/")
	if len(segs) < 2 || strings.HasPrefix(segs[len(segs)-2], "{") {
		return fmt.Errorf("trigger pattern %q: its last collection must be named, not a wildcard", pattern)
	}
	w := &documentWatch{
		bridge:    b,
		client:    client,
		database:  database,
		group:     segs[len(segs)-2],
		pattern:   segs,
		eventType: eventType,
		target:    target,
		exactOld:  exactOld,
		isWatched: make(map[string]bool),
	}
	w.ctx = metadata.AppendToOutgoingContext(ctx, "google-cloud-resource-prefix", w.database)
	go w.discover(w.ctx)
	return nil
}

// dialFirestore is an admin Firestore API client of the emulator at addr.
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
func (g *targetGroup) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := g.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		fmt.Fprintf(g.w.bridge.log, "event bridge: a listen stream of %s ended (%v); listening again\n", g.w.group, err)
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// discover repeatedly queries the collection group's names and watches new matching documents.
func (w *documentWatch) discover(ctx context.Context) {
	query := &firestorepb.RunQueryRequest{
		Parent: w.database + "/documents",
		QueryType: &firestorepb.RunQueryRequest_StructuredQuery{StructuredQuery: &firestorepb.StructuredQuery{
			Select: &firestorepb.StructuredQuery_Projection{Fields: []*firestorepb.StructuredQuery_FieldReference{{FieldPath: "__name__"}}},
			From:   []*firestorepb.StructuredQuery_CollectionSelector{{CollectionId: w.group, AllDescendants: true}},
		}},
	}
	watching := time.Now()
	var recent []time.Duration // the last queries' durations
	for {
		began := time.Now()
		var found []*firestorepb.Document
		results, err := w.client.RunQuery(ctx, query)
		for err == nil {
			var r *firestorepb.RunQueryResponse
			if r, err = results.Recv(); err == nil && r.GetDocument() != nil {
				found = append(found, r.GetDocument())
			}
		}
		if ctx.Err() != nil {
			return
		}
		took := time.Since(began)
		if err != io.EOF {
			fmt.Fprintf(w.bridge.log, "event bridge: query for new %s documents: %v\n", w.group, err)
		}
		added := w.watch(found)
		var lag []time.Duration
		for _, d := range added {
			if created := d.GetCreateTime().AsTime(); created.After(watching) {
				lag = append(lag, time.Since(created))
			}
		}
		w.bridge.discovered(took, len(added), lag)
		recent = append(recent, took)
		if len(recent) > discoveryRecent {
			recent = recent[1:]
		}
		pause := discoveryPause(recent)
		if took >= slowDiscovery {
			fmt.Fprintf(w.bridge.log, "event bridge: the query for new %s documents took %v over %d documents (%d new); the next in %v\n",
				w.group, took.Round(time.Millisecond), len(found), len(added), pause.Round(time.Millisecond))
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return
		}
	}
}

// watch adds a target for each matching document that has none yet, and returns those.
func (w *documentWatch) watch(docs []*firestorepb.Document) (added []*firestorepb.Document) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range docs {
		name := d.GetName()
		path := strings.TrimPrefix(name, w.database+"/documents/")
		if w.isWatched[name] || !matchPattern(w.pattern, strings.Split(path, "/")) {
			continue
		}
		w.isWatched[name] = true
		added = append(added, d)
		if len(w.groups) == 0 || w.groups[len(w.groups)-1].full() {
			g := &targetGroup{w: w, known: make(map[string]*firestorepb.Document)}
			w.groups = append(w.groups, g)
			go g.run(w.ctx)
		}
		if err := w.groups[len(w.groups)-1].add(name); err != nil {
			fmt.Fprintf(w.bridge.log, "event bridge: watch %s: %v\n", path, err)
		}
	}
	return added
}

// full reports whether g has targetsPerStream targets.
func (g *targetGroup) full() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.names) >= targetsPerStream
}

// add watches name, at once if the stream is open, else when it opens.
func (g *targetGroup) add(name string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.names = append(g.names, name)
	if g.stream == nil {
		return nil
	}
	return g.addTargets(len(g.names) - 1)
}

// addTargets sends a document target for each of names[first:]. Call with mu held.
func (g *targetGroup) addTargets(first int) error {
	for i := first; i < len(g.names); i++ {
		err := g.stream.Send(&firestorepb.ListenRequest{
			Database: g.w.database,
			TargetChange: &firestorepb.ListenRequest_AddTarget{AddTarget: &firestorepb.Target{
				TargetId:   int32(i + 1),
				TargetType: &firestorepb.Target_Documents{Documents: &firestorepb.Target_DocumentsTarget{Documents: []string{g.names[i]}}},
			}},
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// listen runs one listen stream with a target per document. A restarted stream shows each document
// as it is now: a known version is no event.
func (g *targetGroup) listen(ctx context.Context) error {
	stream, err := g.w.client.Listen(ctx)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.stream = stream
	err = g.addTargets(0)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.stream = nil
		g.mu.Unlock()
	}()
	if err != nil {
		return err
	}
	// A target current without its document shown: the document was deleted while none listened.
	shown, current := map[int32]bool{}, map[int32]bool{}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		switch r := resp.ResponseType.(type) {
		case *firestorepb.ListenResponse_DocumentChange:
			for _, id := range r.DocumentChange.GetTargetIds() {
				shown[id] = true
			}
			doc := r.DocumentChange.GetDocument()
			if len(r.DocumentChange.GetTargetIds()) > 0 {
				g.w.changed(g.known, doc.GetName(), doc, time.Time{})
			} else {
				g.w.changed(g.known, doc.GetName(), nil, time.Time{})
			}
		case *firestorepb.ListenResponse_DocumentDelete:
			g.w.changed(g.known, r.DocumentDelete.GetDocument(), nil, r.DocumentDelete.GetReadTime().AsTime())
		case *firestorepb.ListenResponse_DocumentRemove:
			g.w.changed(g.known, r.DocumentRemove.GetDocument(), nil, r.DocumentRemove.GetReadTime().AsTime())
		case *firestorepb.ListenResponse_TargetChange:
			switch r.TargetChange.GetTargetChangeType() {
			case firestorepb.TargetChange_REMOVE:
				return fmt.Errorf("target removed: %v", r.TargetChange.GetCause())
			case firestorepb.TargetChange_CURRENT:
				g.missingAtCurrent(r.TargetChange, shown, current)
			}
		}
	}
}

// missingAtCurrent turns each target tc first reports current, with no document shown, into a
// delete of its known document.
func (g *targetGroup) missingAtCurrent(tc *firestorepb.TargetChange, shown, current map[int32]bool) {
	g.mu.Lock()
	ids := tc.GetTargetIds()
	if len(ids) == 0 { // every target of the stream
		for i := range g.names {
			ids = append(ids, int32(i+1))
		}
	}
	var missing []string
	for _, id := range ids {
		if current[id] || id < 1 || int(id) > len(g.names) {
			continue
		}
		current[id] = true
		if !shown[id] {
			missing = append(missing, g.names[id-1])
		}
	}
	g.mu.Unlock()
	for _, name := range missing {
		if g.known[name] != nil {
			g.w.changed(g.known, name, nil, tc.GetReadTime().AsTime())
		}
	}
}

// changed records doc (nil: deleted at deletedAt, or now if zero) as name's version in known and
// queues its events, unless that version is known already.
func (w *documentWatch) changed(known map[string]*firestorepb.Document, name string, doc *firestorepb.Document, deletedAt time.Time) {
	old := known[name]
	if doc == nil && old == nil || doc != nil && old != nil && proto.Equal(doc.GetUpdateTime(), old.GetUpdateTime()) {
		return
	}
	if doc == nil {
		delete(known, name)
	} else {
		known[name] = doc
	}
	steps := []step{{old: old, doc: doc, at: deletedAt}}
	if w.exactOld && doc != nil {
		steps = w.history(name, old, doc)
	}
	for _, st := range steps {
		w.send(name, st)
	}
}

// step is one change of a document: from old to doc (nil: deleted at at, or when zero, now).
type step struct {
	old, doc *firestorepb.Document
	at       time.Time
}

// send queues the event of st.
func (w *documentWatch) send(name string, st step) {
	path := strings.TrimPrefix(name, w.database+"/documents/")
	at := time.Now()
	if st.doc != nil {
		at = st.doc.GetUpdateTime().AsTime()
	} else if st.at.Unix() > 0 {
		at = st.at
	}
	req, body, err := documentEventRequest(w.eventType, w.target, w.database, path, st.doc, st.old, at)
	if err != nil {
		fmt.Fprintf(w.bridge.log, "event bridge: event of %s: %v\n", path, err)
		return
	}
	w.bridge.enqueue(req, body, path, st.doc)
}

// history rebuilds every change from prev (nil: none seen) to doc, oldest first, by reading before
// each version. A delete and re-creation becomes a delete of prev at doc's creation.
func (w *documentWatch) history(name string, prev, doc *firestorepb.Document) []step {
	var steps []step
	for cur := doc; len(steps) < 100; {
		if prev != nil && !prev.GetUpdateTime().AsTime().Before(cur.GetUpdateTime().AsTime()) {
			break
		}
		before, err := w.versionBefore(name, cur.GetUpdateTime().AsTime())
		if err != nil {
			fmt.Fprintf(w.bridge.log, "event bridge: version before %s: %v\n", name, err)
			steps = append(steps, step{old: prev, doc: cur})
			break
		}
		steps = append(steps, step{old: before, doc: cur})
		if before == nil {
			if prev != nil {
				steps = append(steps, step{old: prev, at: cur.GetCreateTime().AsTime()})
			}
			break
		}
		cur = before
	}
	slices.Reverse(steps)
	return steps
}

// versionBefore reads the document name as it was just before t (nil: missing).
func (w *documentWatch) versionBefore(name string, t time.Time) (*firestorepb.Document, error) {
	stream, err := w.client.BatchGetDocuments(w.ctx, &firestorepb.BatchGetDocumentsRequest{
		Database:            w.database,
		Documents:           []string{name},
		ConsistencySelector: &firestorepb.BatchGetDocumentsRequest_ReadTime{ReadTime: timestamppb.New(t.Add(-time.Microsecond))},
	})
	if err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	return resp.GetFound(), nil
}

// updateMask lists the top-level fields an update added, removed or changed.
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

// matchPattern matches path segments to an Eventarc pattern: {x} is one segment, {x=**} any number.
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

// documentEventRequest is Eventarc's binary-mode CloudEvent for a write of path; doc is nil for a
// delete, old for a create.
func documentEventRequest(eventType, target, database, path string, doc, old *firestorepb.Document, at time.Time) (*http.Request, []byte, error) {
	body, err := eventhttp.DocumentEventData(doc, old, updateMask(doc, old))
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, target, nil)
	if err != nil {
		return nil, nil, err
	}
	names := strings.Split(database, "/") // projects/P/databases/D
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
		"Ce-Project":     names[1],
		"Ce-Database":    names[3],
		"Ce-Namespace":   "(default)",
		"Ce-Document":    path,
	} {
		req.Header.Set(k, v)
	}
	return req, body, nil
}
