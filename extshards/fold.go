package extshards

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// The extension's format.
const (
	// ShardsCollection is the subcollection of <doc> the clients write their shards in.
	ShardsCollection = "_counter_shards_"
	// partialPrefix starts the IDs of the partial shards the extension's workers wrote.
	partialPrefix = "\t"
	// updatesField holds a partial's list of {_id_, _data_}; dataField is an entry's numbers.
	updatesField = "_updates_"
	dataField    = "_data_"
)

// MaxShardsPerFold bounds the shards one fold reads, empties or deletes; a document with
// more is folded in rounds, an interval apart.
const MaxShardsPerFold = 400

// cleanUpParallel bounds the deletes of folded shards in flight at once.
const cleanUpParallel = 16

// contentionBackoff is the wait before a fold whose commit contention aborted is tried again.
const contentionBackoff = 100 * time.Millisecond

// foldTimeout bounds one run of a Folder, its wait for the previous run, rounds and waits included.
const foldTimeout = time.Minute

// maxRemembered bounds the per-instance maps of main documents' last write times and existence.
const maxRemembered = 10_000

// MaxWait is how long shards under a missing main document wait for the app to create it (by the
// shard's update time): a fold deletes older ones uncounted. It is Eventarc's redelivery window.
const MaxWait = 24 * time.Hour

// existsFor is how long a Folder trusts that a main document it saw exists (Exists).
const existsFor = 10 * time.Minute

// retryBackoff is the first wait before a fold that failed for a transient reason is tried again.
const retryBackoff = 250 * time.Millisecond

// Result says what a Fold did.
type Result struct {
	// Shards is how many shard and partial documents its folds read.
	Shards int
	// Writes is how many times it wrote the main document.
	Writes int
	// Skipped says, for each partial left unfolded because it holds fields its target does not
	// count, why (a *UncountedFieldsError).
	Skipped []error
	// Waiting is how many shards and partials it left, uncounted, because the main document does not
	// exist (a fold creates no document): they are folded once the app creates it.
	Waiting int
	// Dropped is how many shards and partials it deleted uncounted because the main document had
	// not existed for MaxWait since they were written.
	Dropped int
	// Ignored is how many documents it read that have no shard ID of the extension's form: never
	// folded, never deleted.
	Ignored int
}

// FieldConflictError reports a shard left unfolded because Field (a dotted path) is a number in
// some shards or partials and a map in this one, or the other way round: no sum can hold both.
//
// Deprecated: folds count only the declared fields, each of one shape, so none reports it.
type FieldConflictError struct {
	Shard string // the shard's document path
	Field string
}

func (e *FieldConflictError) Error() string {
	return fmt.Sprintf("shard %s left unfolded: field %q is a number in one shard and a map in another", e.Shard, e.Field)
}

// UncountedFieldsError reports a partial left unfolded because its entries hold fields that its
// main document's target does not count: taking only the counted ones out would lose the others.
type UncountedFieldsError struct {
	Shard string // the partial's document path
}

func (e *UncountedFieldsError) Error() string {
	return fmt.Sprintf("partial %s left unfolded: it holds fields that EXTENSION_FOLDS does not count for its document", e.Shard)
}

// Folder folds shards into their main documents, writing each main document at most once per
// interval across every Folder that shares its database (see Fold), one run per main document at
// a time.
type Folder struct {
	client   *firestore.Client
	interval time.Duration
	targets  Targets
	clock    shared.Clock
	carry    *shared.Carrier // Notify's folds and the event that waits for them

	mu        sync.Mutex
	pending   map[string]*run         // per main document: the run that has not yet read its shards
	latest    map[string]*run         // per main document: the newest run started, which the next one waits for
	lastWrite map[string]time.Time    // per main document: when this Folder last wrote it (local clock)
	seen      map[string]time.Time    // per main document: when this Folder last saw it exist (local clock)
	checking  map[string]*existsCheck // per main document: the read of Exists in flight

	maxWait time.Duration // MaxWait; shorter in tests

	// beforeRead, when set (by tests), runs before each fold's reads; an error fails the reads.
	beforeRead func(doc string) error
	// betweenReads, when set (by tests), runs between a fold's read of the main document and of
	// its shards.
	betweenReads func(doc string)
}

// NewFolder returns a Folder over client that folds the shards of the main documents targets
// declare, each at most once per interval.
func NewFolder(client *firestore.Client, interval time.Duration, targets Targets) *Folder {
	clock := shared.SystemClock{}
	return &Folder{client: client, interval: interval, targets: targets, maxWait: MaxWait, clock: clock, carry: &shared.Carrier{Clock: clock},
		pending: map[string]*run{}, latest: map[string]*run{}, lastWrite: map[string]time.Time{}, seen: map[string]time.Time{},
		checking: map[string]*existsCheck{}}
}

// run is one fold of a main document, shared by every caller that came before it read the shards.
type run struct {
	decided bool // guarded by Folder.mu: the run is reading the shards; later callers need a new run
	done    chan struct{}
	res     Result
	err     error
}

// MainDocument returns the main document's path of a shard or partial document's path
// ("a/b/_counter_shards_/x" gives "a/b"); ok is false for any other path.
func MainDocument(shardPath string) (doc string, ok bool) {
	i := strings.LastIndex(shardPath, "/"+ShardsCollection+"/")
	if i <= 0 {
		return "", false
	}
	doc, id := shardPath[:i], shardPath[i+len(ShardsCollection)+2:]
	segments := strings.Split(doc, "/")
	if id == "" || strings.Contains(id, "/") || len(segments)%2 != 0 || !utf8.ValidString(shardPath) ||
		slices.ContainsFunc(segments, func(s string) bool { return s == "" || s == "." || s == ".." }) {
		return "", false
	}
	return doc, true
}

// Fold folds every shard and partial of the main document doc (a document path such as
// "posts/p1") that was committed before the call, and returns once that is done. Only a doc that a
// target's pattern matches is folded (else ErrNotDeclared), only shards and partials whose IDs have
// the extension's form (ExtensionShardID), and only the target's fields: their numbers are added
// to doc's fields of the same paths and taken out of the shards in one commit, conditional on doc
// being unchanged since it was read (doc and the shards are read in one read-only transaction,
// so at one time), so no fold counts anything twice, whatever is retried or resent. Emptied shards
// that hold nothing but counted fields are then deleted; anything else stays in the shards. Other
// fields of doc are untouched. A fold creates no document: while doc does not exist, its shards
// wait (Result.Waiting), up to MaxWait (then Result.Dropped). Concurrent callers in one Folder
// share one run; runs of one doc follow each other, each waiting until an interval after the
// previous write of doc by this Folder (its clock) and by anyone (doc's update time on Firestore's
// clock), unless doc was written twice within an interval (the app writes doc itself: waiting
// would starve the folds).
func (f *Folder) Fold(ctx context.Context, doc string) (Result, error) {
	if _, ok := f.targets.Match(doc); !ok {
		return Result{}, fmt.Errorf("fold shards of %q: %w", doc, ErrNotDeclared)
	}
	f.mu.Lock()
	r := f.pending[doc]
	if r == nil || r.decided {
		previous := f.latest[doc]
		r = &run{done: make(chan struct{})}
		f.pending[doc], f.latest[doc] = r, r
		// The run outlives any one caller's cancellation: others may be waiting on it.
		go f.run(context.WithoutCancel(ctx), doc, r, previous)
	}
	f.mu.Unlock()
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
		return Result{}, fmt.Errorf("fold shards of %q: %w", doc, ctx.Err())
	}
}

// Notify makes sure a fold of doc that reads its shards after the call follows, without making the
// caller wait for it: the fold runs in this Folder, and only one caller at a time, the carrier,
// waits for every fold of the Folder to finish (see shared.Carrier). carried says whether this call
// was the carrier; err is only its context's end. A fold that fails for a transient reason
// (shared.IsRetryable) is tried again, with backoff, for up to a minute. done is called with the
// outcome, possibly after Notify returned. The folds live as long as the process: when it dies, the
// carrier's event is redelivered, and the shards of the others wait for their next write.
func (f *Folder) Notify(ctx context.Context, doc string, done func(Result, error)) (carried bool, err error) {
	return f.carry.Carry(ctx, func(ctx context.Context) {
		done(f.foldRetrying(ctx, doc))
	})
}

// foldRetrying runs Fold, again after transient failures, for up to foldTimeout; its Result sums
// every attempt's.
func (f *Folder) foldRetrying(ctx context.Context, doc string) (Result, error) {
	deadline := f.clock.Now().Add(foldTimeout)
	backoff := retryBackoff
	var total Result
	for {
		res, err := f.Fold(ctx, doc)
		total.add(res)
		if err == nil || !shared.IsRetryable(err) || f.clock.Now().Add(backoff).After(deadline) {
			return total, err
		}
		if shared.SleepUntil(ctx, f.clock, f.clock.Now().Add(backoff)) != nil {
			return total, err
		}
		backoff = min(2*backoff, 8*time.Second)
	}
}

func (r *Result) add(o Result) {
	r.Shards += o.Shards
	r.Writes += o.Writes
	r.Skipped = append(r.Skipped, o.Skipped...)
	r.Waiting = o.Waiting // the latest attempt's: the same shards wait in each
	r.Dropped += o.Dropped
	r.Ignored = o.Ignored
}

// Declares says whether a target's pattern matches the main document doc: Fold folds only those.
func (f *Folder) Declares(doc string) bool {
	_, ok := f.targets.Match(doc)
	return ok
}

// Exists says whether the main document doc exists: from this Folder's memory when a fold or a
// previous call saw it within the last 10 minutes, else read (concurrent calls share one read).
func (f *Folder) Exists(ctx context.Context, doc string) (bool, error) {
	f.mu.Lock()
	seen, ok := f.seen[doc]
	if ok && f.clock.Now().Sub(seen) < existsFor {
		f.mu.Unlock()
		return true, nil
	}
	c := f.checking[doc]
	if c == nil {
		c = &existsCheck{done: make(chan struct{})}
		f.checking[doc] = c
		go f.check(context.WithoutCancel(ctx), doc, c)
	}
	f.mu.Unlock()
	select {
	case <-c.done:
		return c.exists, c.err
	case <-ctx.Done():
		return false, fmt.Errorf("read main document %q: %w", doc, ctx.Err())
	}
}

// existsCheck is one read of a main document shared by the callers of Exists.
type existsCheck struct {
	done   chan struct{}
	exists bool
	err    error
}

// check reads doc for c.
func (f *Folder) check(ctx context.Context, doc string, c *existsCheck) {
	defer func() {
		f.mu.Lock()
		delete(f.checking, doc)
		f.mu.Unlock()
		close(c.done)
	}()
	ctx, cancel := context.WithTimeout(ctx, foldTimeout)
	defer cancel()
	_, err := f.client.Doc(doc).Get(ctx)
	switch status.Code(err) {
	case codes.OK:
		f.saw(doc, true)
		c.exists = true
	case codes.NotFound:
		f.saw(doc, false)
	default:
		c.err = fmt.Errorf("read main document %q: %w", doc, err)
	}
}

// saw records whether doc was found to exist now.
func (f *Folder) saw(doc string, exists bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !exists {
		delete(f.seen, doc)
		return
	}
	forgetOne(f.seen)
	f.seen[doc] = f.clock.Now()
}

// forgetOne deletes a random entry of m when it holds maxRemembered.
func forgetOne(m map[string]time.Time) {
	if len(m) >= maxRemembered {
		for k := range m { // Go's map order is random
			delete(m, k)
			break
		}
	}
}

// run performs r once the previous run of doc (if any) has finished: rounds of folds, each reading
// the shards after the previous round's, until one finds fewer than MaxShardsPerFold.
func (f *Folder) run(ctx context.Context, doc string, r *run, previous *run) {
	defer func() {
		f.mu.Lock()
		if f.pending[doc] == r {
			delete(f.pending, doc)
		}
		if f.latest[doc] == r {
			delete(f.latest, doc)
		}
		f.mu.Unlock()
		close(r.done)
	}()
	ctx, cancel := context.WithTimeout(ctx, foldTimeout)
	defer cancel()
	if previous != nil {
		select {
		case <-previous.done:
		case <-ctx.Done():
			r.err = fmt.Errorf("fold shards of %q: wait for the previous fold: %w", doc, ctx.Err())
			return
		}
	}
	target, _ := f.targets.Match(doc)
	after := ""             // the last shard ID a finished round read
	var waitedFor time.Time // the update time of doc that this run last waited to age
	for {
		f.mu.Lock()
		next := f.lastWrite[doc].Add(f.interval)
		f.mu.Unlock()
		if err := shared.SleepUntil(ctx, f.clock, next); err != nil {
			r.err = fmt.Errorf("fold shards of %q: %w", doc, err)
			return
		}
		round, wait, err := f.foldOnce(ctx, doc, target, r, after, waitedFor)
		if errors.Is(err, errConflict) {
			continue // whoever wrote doc makes the next round wait
		}
		if err != nil {
			r.err = fmt.Errorf("fold shards of %q: %w", doc, err)
			return
		}
		if wait > 0 {
			if !round.young.IsZero() {
				waitedFor = round.young
			}
			if err := shared.SleepUntil(ctx, f.clock, f.clock.Now().Add(wait)); err != nil {
				r.err = fmt.Errorf("fold shards of %q: %w", doc, err)
				return
			}
			continue
		}
		r.res.Shards += round.Shards
		r.res.Writes += round.Writes
		r.res.Skipped = append(r.res.Skipped, round.Skipped...)
		r.res.Waiting += round.Waiting
		r.res.Dropped += round.Dropped
		r.res.Ignored += round.Ignored
		if round.Writes > 0 {
			f.remember(doc)
		}
		if round.Shards < MaxShardsPerFold {
			return
		}
		after = round.last
	}
}

// remember records that doc was written now.
func (f *Folder) remember(doc string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	forgetOne(f.lastWrite)
	f.lastWrite[doc] = f.clock.Now()
}

// round is what one fold of a page of shards did.
type round struct {
	Result
	last  string    // the ID of the page's last shard
	young time.Time // when waiting for doc to age: its update time
}

// foldOnce runs one fold of doc's shards whose IDs follow after (all when after is ""), at most
// MaxShardsPerFold of them, reading doc and the shards in one read-only transaction. It returns
// wait > 0, having written nothing, when the commit was aborted by contention, or when doc was
// written less than an interval before it was read (then round.young is that update time), unless
// waitedFor, a previous young version, was less than an interval before it: two writes within an
// interval are not both folds (which keep the interval), so the app writes doc more often than
// that, and waiting would starve the folds. It returns errConflict when doc changed between its
// read and the fold's commit (another fold, a write of the app, or a resend of this one whose
// first attempt applied).
func (f *Folder) foldOnce(ctx context.Context, doc string, target Target, r *run, after string, waitedFor time.Time) (res round, wait time.Duration, err error) {
	ref := f.client.Doc(doc)
	// From here on the shards read include every write committed before now.
	f.mu.Lock()
	r.decided = true
	f.mu.Unlock()
	var main *firestore.DocumentSnapshot
	var shards []*firestore.DocumentSnapshot
	err = f.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		main, shards, wait = nil, nil, 0
		if f.beforeRead != nil {
			if err := f.beforeRead(doc); err != nil {
				return err
			}
		}
		snaps, err := tx.GetAll([]*firestore.DocumentRef{ref})
		if err != nil {
			return fmt.Errorf("read main document: %w", err)
		}
		main = snaps[0]
		if main.Exists() {
			busy := !waitedFor.IsZero() && main.UpdateTime.Sub(waitedFor) < f.interval
			if age := main.ReadTime.Sub(main.UpdateTime); age < f.interval && !busy {
				wait = f.interval - age
				return nil
			}
		}
		if f.betweenReads != nil {
			f.betweenReads(doc)
		}
		q := ref.Collection(ShardsCollection).OrderBy(firestore.DocumentID, firestore.Asc)
		if after != "" {
			q = q.StartAfter(after)
		}
		if shards, err = tx.Documents(q.Limit(MaxShardsPerFold)).GetAll(); err != nil {
			return fmt.Errorf("read shards: %w", err)
		}
		return nil
	}, firestore.ReadOnly)
	if err != nil {
		return res, 0, err
	}
	if wait > 0 {
		// Nothing read yet: callers that come while this run waits may join it again.
		f.mu.Lock()
		if f.pending[doc] == r {
			r.decided = false
		}
		f.mu.Unlock()
		res.young = main.UpdateTime
		return res, wait, nil
	}
	res.Shards = len(shards)
	if len(shards) > 0 {
		res.last = shards[len(shards)-1].Ref.ID
	}
	if !main.Exists() {
		// A fold creates no document: the shards wait for the app to create it, up to MaxWait.
		f.saw(doc, false)
		var expired []version
		for _, s := range shards {
			switch {
			case !ExtensionShardID(s.Ref.ID):
				res.Ignored++
			case s.ReadTime.Sub(s.UpdateTime) > f.maxWait:
				expired = append(expired, version{s.Ref, s.UpdateTime})
			default:
				res.Waiting++
			}
		}
		res.Dropped = f.cleanUp(ctx, expired)
		return res, 0, nil
	}
	f.saw(doc, true)
	p, err := plan(shards, target)
	if err != nil {
		return res, 0, err
	}
	res.Ignored = p.ignored
	res.Skipped = p.skipped
	if len(p.toMain) > 0 {
		batch := f.client.Batch()
		batch.Update(ref, p.toMain, firestore.LastUpdateTime(main.UpdateTime))
		for _, s := range p.subtract {
			batch.Update(s.ref, s.updates)
		}
		for _, d := range p.remove {
			batch.Delete(d.ref, firestore.LastUpdateTime(d.updated))
		}
		_, err := batch.Commit(ctx)
		switch status.Code(err) {
		case codes.FailedPrecondition, codes.AlreadyExists, codes.NotFound:
			return res, 0, errConflict
		case codes.Aborted:
			// Contention with the clients' shard writes: nothing was applied; try again soon.
			return res, contentionBackoff, nil
		}
		if err != nil {
			return res, 0, fmt.Errorf("commit fold: %w", err)
		}
		res.Writes = 1
		// A client may have written a shard between the read and the commit: only those now
		// holding zeros are deleted, each as of the version read.
		emptied, err := f.zeros(ctx, p.subtract, target)
		if err != nil {
			return res, 0, err
		}
		p.zero = append(p.zero, emptied...)
	}
	f.cleanUp(ctx, p.zero)
	return res, 0, nil
}

// errConflict: the main document changed between a fold's read and its commit; nothing was written.
var errConflict = errors.New("main document changed during the fold")

// version is a document as of an update time.
type version struct {
	ref     *firestore.DocumentRef
	updated time.Time
}

// subtraction takes a folded shard's numbers out of it.
type subtraction struct {
	ref         *firestore.DocumentRef
	updates     []firestore.Update
	onlyNumbers bool // the shard holds nothing else: delete it once it is zero
}

// foldPlan is what one fold writes: increments of the main document, and what takes the same
// amounts out of the shards in the same commit (subtractions; partials deleted), and the shards of
// numbers only found at zero, deleted afterwards; skipped says which shards it leaves, and why.
type foldPlan struct {
	toMain   []firestore.Update
	subtract []subtraction
	remove   []version
	zero     []version
	skipped  []error
	ignored  int
}

// plan sums target's fields of shards (partials: of their _updates_ entries' _data_), those whose
// IDs have the extension's form, and says how to fold them. A partial holding anything else is
// left (its entries cannot be taken apart). When the
// sums are zero in every field yet shards are to be emptied or partials deleted, toMain holds an
// increment by zero of each field: the commit still carries the main document's precondition, so
// that a partial is never deleted without its amounts being taken out of the shards with it.
func plan(shards []*firestore.DocumentSnapshot, target Target) (foldPlan, error) {
	var p foldPlan
	total := sum{}
	fields := target.tree()
	for _, s := range shards {
		if !ExtensionShardID(s.Ref.ID) {
			p.ignored++
			continue
		}
		data := s.Data()
		partial := strings.HasPrefix(s.Ref.ID, partialPrefix)
		own := sum{}
		onlyNumbers, err := true, error(nil)
		if partial {
			entries, _ := data[updatesField].([]any)
			for _, e := range entries {
				entry, _ := e.(map[string]any)
				numbers, _ := entry[dataField].(map[string]any)
				counted, only := fields.pick(numbers)
				if !only {
					err = &UncountedFieldsError{Shard: s.Ref.Path}
					break
				}
				if _, err = own.add(counted); err != nil {
					break
				}
			}
		} else {
			counted, only := fields.pick(data)
			if _, err = own.add(counted); err == nil {
				onlyNumbers = only
			}
		}
		if uncounted := (*UncountedFieldsError)(nil); errors.As(err, &uncounted) {
			p.skipped = append(p.skipped, uncounted)
			continue
		}
		if err == nil {
			err = total.conflict(own)
		}
		if conflict := (*FieldConflictError)(nil); errors.As(err, &conflict) {
			conflict.Shard = s.Ref.Path
			p.skipped = append(p.skipped, conflict)
			continue
		}
		if err == nil {
			_, err = total.add(own)
		}
		if err != nil {
			return p, fmt.Errorf("shard %s: %w", s.Ref.Path, err)
		}
		switch updates := own.increments(nil, true, false); {
		case partial:
			p.remove = append(p.remove, version{s.Ref, s.UpdateTime})
		case len(updates) > 0:
			p.subtract = append(p.subtract, subtraction{s.Ref, updates, onlyNumbers})
		case onlyNumbers:
			p.zero = append(p.zero, version{s.Ref, s.UpdateTime})
		}
	}
	p.toMain = total.increments(nil, false, false)
	if len(p.toMain) == 0 && (len(p.subtract) > 0 || len(p.remove) > 0) {
		p.toMain = total.increments(nil, false, true)
	}
	if len(p.toMain) == 0 {
		// Partials without a number: nothing to count, deleted as zero shards are.
		p.zero = append(p.zero, p.remove...)
		p.remove = nil
	}
	return p, nil
}

// zeros reads the shards of counted fields only among subtracted and returns those holding only
// zeros.
func (f *Folder) zeros(ctx context.Context, subtracted []subtraction, target Target) ([]version, error) {
	var refs []*firestore.DocumentRef
	for _, s := range subtracted {
		if s.onlyNumbers {
			refs = append(refs, s.ref)
		}
	}
	if len(refs) == 0 {
		return nil, nil
	}
	snaps, err := f.client.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("read folded shards: %w", err)
	}
	var zero []version
	for _, s := range snaps {
		if !s.Exists() {
			continue
		}
		own := sum{}
		counted, only := target.tree().pick(s.Data())
		if _, err := own.add(counted); err == nil && only && len(own.increments(nil, false, false)) == 0 {
			zero = append(zero, version{s.Ref, s.UpdateTime})
		}
	}
	return zero, nil
}

// cleanUp deletes shards that hold only zeros (or whose main document is missing), each unless it
// was written since (then a later fold takes it), and returns how many it deleted. A failed delete
// leaves the shard, which costs a read later and never a wrong count. Each delete is a commit of its
// own (BulkWriter's BatchWrite did not hold its precondition against concurrent writes in the
// emulator).
func (f *Folder) cleanUp(ctx context.Context, shards []version) int {
	var wg sync.WaitGroup
	var deleted atomic.Int64
	limit := make(chan struct{}, cleanUpParallel)
	for _, z := range shards {
		limit <- struct{}{}
		wg.Go(func() {
			defer func() { <-limit }()
			if _, err := z.ref.Delete(ctx, firestore.LastUpdateTime(z.updated)); err == nil {
				deleted.Add(1)
			}
		})
	}
	wg.Wait()
	return int(deleted.Load())
}

// Sweep folds every declared main document that has shards or partials, for the cut-over from the
// extension (whose shards and partials may be left mid-aggregation). It lists the shards with one
// collection group query (one read per shard document) and folds each main document once (those
// no target declares are passed over); it returns how many it folded.
func (f *Folder) Sweep(ctx context.Context) (docs int, err error) {
	refs, err := f.client.CollectionGroup(ShardsCollection).Select().Documents(ctx).GetAll()
	if err != nil {
		return 0, fmt.Errorf("list shards: %w", err)
	}
	seen := map[string]bool{}
	for _, r := range refs {
		doc := r.Ref.Parent.Parent
		if doc == nil || seen[doc.Path] {
			continue
		}
		seen[doc.Path] = true
		if _, ok := f.targets.Match(relativePath(doc)); !ok {
			continue
		}
		if _, err := f.Fold(ctx, relativePath(doc)); err != nil {
			return docs, err
		}
		docs++
	}
	return docs, nil
}

// relativePath is ref's path relative to the database's documents.
func relativePath(ref *firestore.DocumentRef) string {
	_, rel, _ := strings.Cut(ref.Path, "/documents/")
	return rel
}
