package rollup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardcount/counters/shared/clock"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// MaxTop is a stored top list's length.
const MaxTop = 100

// TopList is {tops}/{group}_{window}: up to MaxTop counters of Group, highest count in Bucket ("":
// all time) first, ranking every roll-up written before UpdatedAt.
type TopList struct {
	Group     string     `firestore:"group"`
	Window    string     `firestore:"window"`
	Bucket    string     `firestore:"bucket"`
	Top       []TopEntry `firestore:"top"`
	UpdatedAt time.Time  `firestore:"updated_at"`
}

// TopEntry is one counter of a top list.
type TopEntry struct {
	Counter string `firestore:"counter" json:"counter"`
	Count   int64  `firestore:"count" json:"count"`
}

// Top reads group's list in window for bucket ("": the latest written); another bucket's, or none, is
// empty.
func (s *Store) Top(ctx context.Context, group, window, bucket string) (TopList, error) {
	empty := TopList{Group: group, Window: window, Bucket: bucket, Top: []TopEntry{}}
	snap, err := s.schema.TopRef(s.client, group, window).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return empty, nil
	}
	if err != nil {
		return TopList{}, fmt.Errorf("read top list of group %q, window %s: %w", group, window, err)
	}
	var l TopList
	if err := snap.DataTo(&l); err != nil {
		return TopList{}, fmt.Errorf("decode top list of group %q, window %s: %w", group, window, err)
	}
	if bucket != "" && l.Bucket != bucket {
		return empty, nil
	}
	if l.Top == nil {
		l.Top = []TopEntry{}
	}
	return l, nil
}

// refreshTops brings group's lists up to a roll-up written at writtenAt, recomputing each at most
// once per interval; failures are *topListError.
func (b *firestoreBackend) refreshTops(ctx context.Context, group string, windows []string, writtenAt time.Time) error {
	for _, w := range append([]string{shared.TopWindowAll}, windows...) {
		if err := b.refreshTop(ctx, group, w, writtenAt); err != nil {
			return &topListError{due: topsDue{Group: group, Windows: windows, WrittenAt: writtenAt},
				err: fmt.Errorf("refresh top list of group %q, window %s: %w", group, w, err)}
		}
	}
	return nil
}

// topsDue are a group's lists that failed to rank the roll-ups written before WrittenAt.
type topsDue struct {
	Group     string    `firestore:"group"`
	Windows   []string  `firestore:"windows"`
	WrittenAt time.Time `firestore:"written_at"`
}

// topListError is a failed refresh of top lists after a roll-up write.
type topListError struct {
	due topsDue
	err error
}

func (e *topListError) Error() string { return e.err.Error() }
func (e *topListError) Unwrap() error { return e.err }

// topRefreshes runs, per instance, at most one refresh of a list at a time; a roll-up written
// while one runs is ranked by one follow-up refresh after it.
type topRefreshes struct {
	mu   sync.Mutex
	runs map[topKey]*topRun
}

type topKey struct{ group, window string }

// topRun refreshes one list until it ranks every roll-up asked of it, or fails. Fields are guarded
// by topRefreshes.mu.
type topRun struct {
	asked    time.Time     // the latest writtenAt asked
	ranked   time.Time     // the list's UpdatedAt after the last refresh that succeeded
	progress chan struct{} // closed, and replaced, after each refresh
	err      error         // the refresh that failed and ended the run
}

// refreshTop returns once group's list in window ranks every roll-up written before writtenAt,
// sharing the instance's run of that list.
func (b *firestoreBackend) refreshTop(ctx context.Context, group, window string, writtenAt time.Time) error {
	return b.tops.wait(ctx, topKey{group, window}, writtenAt, func(ctx context.Context, asked time.Time) (time.Time, error) {
		return b.writeTop(ctx, group, window, asked)
	})
}

// topWrite brings a list up to the roll-ups written before asked and returns its UpdatedAt.
type topWrite func(ctx context.Context, asked time.Time) (time.Time, error)

// wait returns once k's list ranks writtenAt (its UpdatedAt is not before it), or with the error of
// the refresh that failed, starting k's run with write unless one runs.
func (t *topRefreshes) wait(ctx context.Context, k topKey, writtenAt time.Time, write topWrite) error {
	t.mu.Lock()
	r := t.runs[k]
	if r == nil {
		r = &topRun{asked: writtenAt, progress: make(chan struct{})}
		if t.runs == nil {
			t.runs = make(map[topKey]*topRun)
		}
		t.runs[k] = r
		go t.run(context.WithoutCancel(ctx), k, r, write)
	} else if writtenAt.After(r.asked) {
		r.asked = writtenAt
	}
	for {
		ranked, err, progress := r.ranked, r.err, r.progress
		t.mu.Unlock()
		switch {
		case !ranked.IsZero() && !ranked.Before(writtenAt):
			return nil
		case err != nil:
			return err
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		}
		t.mu.Lock()
	}
}

// run writes k's list until it ranks r.asked. A roll-up is asked after its write returned: a
// refresh that read before may miss it, the next reads after it. A failure ends r.
func (t *topRefreshes) run(ctx context.Context, k topKey, r *topRun, write topWrite) {
	for {
		t.mu.Lock()
		asked := r.asked
		t.mu.Unlock()
		pass, cancel := context.WithTimeout(ctx, refreshTimeout)
		ranked, err := write(pass, asked)
		cancel()
		t.mu.Lock()
		if ranked.After(r.ranked) {
			r.ranked = ranked
		}
		r.err = err
		close(r.progress)
		r.progress = make(chan struct{})
		end := err != nil || !r.asked.After(r.ranked)
		if end {
			delete(t.runs, k)
		}
		t.mu.Unlock()
		if end {
			return
		}
	}
}

// maxTopAttempts bounds one refresh's conditional writes.
const maxTopAttempts = 4

// writeTop ranks group's roll-ups into its list in window unless the list ranks those written
// before writtenAt; it returns the list's UpdatedAt.
func (b *firestoreBackend) writeTop(ctx context.Context, group, window string, writtenAt time.Time) (time.Time, error) {
	ref := b.schema.TopRef(b.client, group, window)
	for range maxTopAttempts {
		snap, err := ref.Get(ctx)
		exists := err == nil
		if err != nil && status.Code(err) != codes.NotFound {
			return time.Time{}, err
		}
		readAt := snap.ReadTime
		if exists {
			updated, _ := snap.DataAt(shared.FieldUpdatedAt)
			if t, ok := updated.(time.Time); ok {
				if !t.Before(writtenAt) {
					return t, nil // ranks ours already
				}
				// Spaced from the list's last commit, not its ranking's read time: one write an interval.
				if wait := snap.UpdateTime.Add(b.interval).Sub(readAt); wait > 0 {
					if err := clock.SleepUntil(ctx, clock.System{}, time.Now().Add(wait)); err != nil {
						return time.Time{}, err
					}
					continue
				}
			}
		}
		list, err := b.rank(ctx, group, window, readAt)
		if err != nil {
			return time.Time{}, err
		}
		if exists {
			_, err = ref.Update(ctx, list.updates(), firestore.LastUpdateTime(snap.UpdateTime))
		} else {
			_, err = ref.Create(ctx, list)
		}
		switch code := status.Code(err); {
		case err == nil:
			return list.UpdatedAt, nil
		case code != codes.FailedPrecondition && code != codes.AlreadyExists:
			return time.Time{}, err
		}
	}
	return time.Time{}, errors.New("the top list kept changing under its refresh")
}

// rank queries group's MaxTop highest roll-ups in window's bucket holding at; it needs
// manifest.CompositeIndexes.
func (b *firestoreBackend) rank(ctx context.Context, group, window string, at time.Time) (TopList, error) {
	list := TopList{Group: group, Window: window, Top: []TopEntry{}, UpdatedAt: at}
	q := b.client.Collection(b.schema.Rollups).Where(shared.FieldGroup, "==", group)
	countPath := firestore.FieldPath{shared.FieldCount}
	if window != shared.TopWindowAll {
		list.Bucket = counter.Bucket(window, at)
		q = q.WherePath(firestore.FieldPath{shared.FieldWindows, window, shared.FieldBucket}, "==", list.Bucket)
		countPath = firestore.FieldPath{shared.FieldWindows, window, shared.FieldCount}
	}
	it := q.OrderByPath(countPath, firestore.Desc).Limit(MaxTop).Documents(ctx)
	defer it.Stop()
	for {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return list, nil
		}
		if err != nil {
			return TopList{}, err
		}
		n, err := snap.DataAtPath(countPath)
		if err != nil {
			return TopList{}, err
		}
		count, _ := n.(int64)
		list.Top = append(list.Top, TopEntry{Counter: snap.Ref.ID, Count: count})
	}
}

// updates are the list's fields as an Update, which takes a precondition.
func (l TopList) updates() []firestore.Update {
	top := make([]map[string]any, len(l.Top))
	for i, e := range l.Top {
		top[i] = map[string]any{shared.FieldTopCounter: e.Counter, shared.FieldCount: e.Count}
	}
	return []firestore.Update{
		{Path: shared.FieldGroup, Value: l.Group},
		{Path: shared.FieldWindow, Value: l.Window},
		{Path: shared.FieldBucket, Value: l.Bucket},
		{Path: shared.FieldTop, Value: top},
		{Path: shared.FieldUpdatedAt, Value: l.UpdatedAt},
	}
}

// RefreshTopsAfterDelete makes the lists that ranked roll-up before stop ranking counter id, whose
// roll-up must be deleted by then; nothing when before has no group or the roll-up exists again.
func (e *Engine) RefreshTopsAfterDelete(ctx context.Context, id string, before *Document) error {
	if before == nil || before.Group == "" || e.sweeper == nil {
		return nil
	}
	fs := e.sweeper
	snap, err := fs.schema.RollupRef(fs.client, id).Get(ctx)
	if err == nil {
		return nil
	}
	if status.Code(err) != codes.NotFound {
		return fmt.Errorf("read the roll-up of deleted counter %q: %w", id, err)
	}
	return fs.refreshTops(ctx, before.Group, before.windowNames(), snap.ReadTime)
}
