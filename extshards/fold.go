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

	"github.com/shardcount/counters/shared/carrier"
	"github.com/shardcount/counters/shared/clock"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// The extension's format.
const (
	// ShardsCollection is the subcollection of <doc> holding the shards.
	ShardsCollection = "_counter_shards_"
	// partialPrefix starts the IDs of the extension workers' partials.
	partialPrefix = "\t"
	// updatesField holds a partial's list of {_id_, _data_}; dataField is an entry's numbers.
	updatesField = "_updates_"
	dataField    = "_data_"
)

// MaxShardsPerFold bounds the shards one fold round reads.
const MaxShardsPerFold = 400

// cleanUpParallel bounds concurrent deletes of folded shards.
const cleanUpParallel = 16

// contentionBackoff is the wait after a commit aborted by contention.
const contentionBackoff = 100 * time.Millisecond

// foldTimeout bounds one run, waits included.
const foldTimeout = time.Minute

// maxRemembered bounds the per-document maps of a Folder.
const maxRemembered = 10_000

// MaxWait is how long shards under a missing main document wait before a fold drops them.
const MaxWait = 24 * time.Hour

// existsFor is how long Exists trusts a main document seen to exist.
const existsFor = 10 * time.Minute

// retryBackoff is the first wait before retrying a transient failure.
const retryBackoff = 250 * time.Millisecond

// Result says what a Fold did.
type Result struct {
	Shards  int     // shards and partials read
	Writes  int     // writes of the main document
	Skipped []error // partials left unfolded (*UncountedFieldsError)
	Waiting int     // shards under a missing main document
	Dropped int     // shards deleted uncounted after MaxWait
	Ignored int     // documents without an extension-form ID
}

// FieldConflictError reports a shard left unfolded because Field (dotted) is a number in one shard
// and a map in another.
//
// Deprecated: folds count only declared fields, so none reports it.
type FieldConflictError struct {
	Shard string // document path
	Field string
}

func (e *FieldConflictError) Error() string {
	return fmt.Sprintf("shard %s left unfolded: field %q is a number in one shard and a map in another", e.Shard, e.Field)
}

// UncountedFieldsError reports a partial left unfolded because it holds fields its target does not
// count.
type UncountedFieldsError struct {
	Shard string // document path
}

func (e *UncountedFieldsError) Error() string {
	return fmt.Sprintf("partial %s left unfolded: it holds fields that EXTENSION_FOLDS does not count for its document", e.Shard)
}

// Folder folds shards into their main documents, one run per document at a time, writing each at
// most once per interval (see Fold).
type Folder struct {
	client   *firestore.Client
	interval time.Duration
	targets  Targets
	clock    clock.Clock
	carry    *carrier.Carrier

	mu        sync.Mutex
	pending   map[string]*run // run not yet reading shards
	latest    map[string]*run // newest run; the next waits for it
	lastWrite map[string]time.Time
	seen      map[string]time.Time // last seen to exist
	checking  map[string]*existsCheck

	maxWait time.Duration

	// Test hooks.
	beforeRead   func(doc string) error
	betweenReads func(doc string)
}

// NewFolder returns a Folder of the documents targets declare, writing each at most once per
// interval.
func NewFolder(client *firestore.Client, interval time.Duration, targets Targets) *Folder {
	clock := clock.System{}
	return &Folder{client: client, interval: interval, targets: targets, maxWait: MaxWait, clock: clock, carry: &carrier.Carrier{Clock: clock},
		pending: map[string]*run{}, latest: map[string]*run{}, lastWrite: map[string]time.Time{}, seen: map[string]time.Time{},
		checking: map[string]*existsCheck{}}
}

// run is one fold of a main document, shared by callers until it reads the shards.
type run struct {
	decided bool // guarded by Folder.mu: reading shards, later callers need a new run
	done    chan struct{}
	res     Result
	err     error
}

// MainDocument returns the main document of a shard path ("a/b/_counter_shards_/x" gives "a/b");
// ok is false for any other path.
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

// Fold folds every shard of doc ("posts/p1") committed before the call into doc, exactly once,
// and deletes emptied shards; ErrNotDeclared when no target matches doc. Shards under a missing doc
// wait up to MaxWait. See docs/migrate-from-firestore-counter.md, "How the fold works".
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
		// Other callers may wait on the run.
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

// Notify ensures a fold of doc that reads its shards after the call, retried on transient failures,
// and calls done with its outcome, possibly after returning. carried: this call waited for the
// Folder's folds (see carrier.Carrier).
func (f *Folder) Notify(ctx context.Context, doc string, done func(Result, error)) (carried bool, err error) {
	return f.carry.Carry(ctx, func(ctx context.Context) {
		done(f.foldRetrying(ctx, doc))
	})
}

// foldRetrying runs Fold, retrying transient failures for up to foldTimeout; the Result sums attempts.
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
		if clock.SleepUntil(ctx, f.clock, f.clock.Now().Add(backoff)) != nil {
			return total, err
		}
		backoff = min(2*backoff, 8*time.Second)
	}
}

func (r *Result) add(o Result) {
	r.Shards += o.Shards
	r.Writes += o.Writes
	r.Skipped = append(r.Skipped, o.Skipped...)
	r.Waiting = o.Waiting
	r.Dropped += o.Dropped
	r.Ignored = o.Ignored
}

// Declares says whether a target matches the main document doc.
func (f *Folder) Declares(doc string) bool {
	_, ok := f.targets.Match(doc)
	return ok
}

// Exists says whether the main document doc exists, trusting a sighting within existsFor.
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

// existsCheck is one read shared by Exists callers.
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

// saw records whether doc exists now.
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

// forgetOne deletes a random entry of m when it is full.
func forgetOne(m map[string]time.Time) {
	if len(m) >= maxRemembered {
		for k := range m {
			delete(m, k)
			break
		}
	}
}

// run performs r after previous: rounds of folds until one reads fewer than MaxShardsPerFold shards.
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
	after := ""
	var waitedFor time.Time
	for {
		f.mu.Lock()
		next := f.lastWrite[doc].Add(f.interval)
		f.mu.Unlock()
		if err := clock.SleepUntil(ctx, f.clock, next); err != nil {
			r.err = fmt.Errorf("fold shards of %q: %w", doc, err)
			return
		}
		round, wait, err := f.foldOnce(ctx, doc, target, r, after, waitedFor)
		if errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			r.err = fmt.Errorf("fold shards of %q: %w", doc, err)
			return
		}
		if wait > 0 {
			if !round.young.IsZero() {
				waitedFor = round.young
			}
			if err := clock.SleepUntil(ctx, f.clock, f.clock.Now().Add(wait)); err != nil {
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
	last  string
	young time.Time // doc's update time, when waiting
}

// foldOnce folds up to MaxShardsPerFold of doc's shards after ID after. Having written nothing, it
// returns wait > 0 on contention or while doc is younger than an interval, unless waitedFor shows
// the app writes doc often; errConflict when doc changed between read and commit.
func (f *Folder) foldOnce(ctx context.Context, doc string, target Target, r *run, after string, waitedFor time.Time) (res round, wait time.Duration, err error) {
	ref := f.client.Doc(doc)
	// The shards read include every write committed before now.
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
		// Nothing read yet: new callers may join.
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
		// A fold creates no document: shards wait, up to MaxWait.
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
			// Contention with shard writes: nothing applied.
			return res, contentionBackoff, nil
		}
		if err != nil {
			return res, 0, fmt.Errorf("commit fold: %w", err)
		}
		res.Writes = 1
		// Only shards now at zero are deleted: clients may have written since.
		emptied, err := f.zeros(ctx, p.subtract, target)
		if err != nil {
			return res, 0, err
		}
		p.zero = append(p.zero, emptied...)
	}
	f.cleanUp(ctx, p.zero)
	return res, 0, nil
}

// errConflict: the main document changed between a fold's read and commit; nothing was written.
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
	onlyNumbers bool
}

// foldPlan is one fold's writes: toMain, with subtract and remove in the same commit; zero is
// deleted afterwards; skipped are shards left unfolded.
type foldPlan struct {
	toMain   []firestore.Update
	subtract []subtraction
	remove   []version
	zero     []version
	skipped  []error
	ignored  int
}

// plan sums target's fields of the extension-form shards and partials. If sums are zero but shards
// change, toMain holds zero increments so the commit keeps the main document's precondition.
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
		// Partials without a number are deleted as zero shards.
		p.zero = append(p.zero, p.remove...)
		p.remove = nil
	}
	return p, nil
}

// zeros returns the number-only shards among subtracted that now hold only zeros.
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

// cleanUp deletes each shard unless written since, and returns how many it deleted. One commit per
// delete: BatchWrite ignored preconditions in the emulator.
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

// Sweep folds once each declared main document that has shards, and returns how many it folded.
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
