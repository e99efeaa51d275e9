package sources

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// A sum counter's total and shards stay within int64: docs/collection-counters.md, "How it stays exact".

// shardBound is the most a sum counter's shard holds without FieldSumWide (the slow path and a
// shrink's fold set it past that).
const shardBound = math.MaxInt64 / 4096

// fastDelta bounds the deltas of a commit on the fast path: it reads no shard in its transaction,
// only its shard just before (no lock), found within ±shardBound/2. A shard then passes
// shardBound by fastDelta per commit racing that read: 1,000 shards sum past int64 only if some
// shard took 200,000 such commits at once.
const fastDelta = shardBound / 65536

// sumPlan is how a sum counter's change transaction counts its changes within int64.
type sumPlan struct {
	outOfRange map[int]bool        // batch indexes counted otherwise than in full
	unapplied  map[string]*big.Int // document path → what it adds and the counter does not count
}

// planSum keeps sum counter id within int64 as it counts batch's fresh changes with w, within tx;
// counterSnap is the counter as tx read it. A change counts in full when the total stays within
// int64 (with what earlier refusals left out of its document); else its document counts 0; else as
// it did. A count() counter needs nothing, nor do small changes to a small shard (fastSum).
func (c *Counting) planSum(ctx context.Context, tx *firestore.Transaction, counterSnap *firestore.DocumentSnapshot, w *counter.ShardWrite, batch []change, fresh []int) (sumPlan, error) {
	if batch[fresh[0]].base.d.Sum == "" {
		return sumPlan{}, nil
	}
	id := batch[fresh[0]].counter
	wide, _ := counterSnap.Data()[shared.FieldSumWide].(bool)
	refused, _ := counterSnap.Data()[shared.FieldSumRefused].(bool)
	unapplied := map[string]*big.Int{}
	if refused {
		var err error
		if unapplied, err = c.readUnapplied(tx, id, batch, fresh); err != nil {
			return sumPlan{}, err
		}
	}
	if !wide && len(unapplied) == 0 {
		fast, err := c.fastSum(ctx, id, w.Shard(), batch, fresh)
		if err != nil || fast {
			return sumPlan{}, err
		}
	}
	shards, err := c.readShards(tx, counterSnap, id)
	if err != nil {
		return sumPlan{}, err
	}
	plan, byShard := shards.count(batch, fresh, unapplied, w.Shard())
	if err := w.Spread(byShard); err != nil {
		return sumPlan{}, err
	}
	if nowWide := shards.wide(); nowWide != wide {
		w.UpdateCounter(firestore.Update{Path: shared.FieldSumWide, Value: nowWide})
	}
	if !refused && slices.ContainsFunc(slices.Collect(maps.Values(plan.unapplied)), func(u *big.Int) bool { return u.Sign() != 0 }) {
		w.UpdateCounter(firestore.Update{Path: shared.FieldSumRefused, Value: true})
	}
	return plan, nil
}

// fastSum reports whether batch's fresh changes may go to shard of counter id without reading
// shards in their transaction: their sum and that shard (read outside it: no lock) are small.
func (c *Counting) fastSum(ctx context.Context, id string, shard int, batch []change, fresh []int) (bool, error) {
	var sum int64
	for _, i := range fresh {
		sum += batch[i].delta // changesToTake keeps it within int64
	}
	if sum < -fastDelta || sum > fastDelta {
		return false, nil
	}
	snap, err := c.collections.ShardRef(id, shard).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read shard %d of counter %q: %w", shard, id, err)
	}
	have, _ := snap.Data()[shared.FieldCount].(int64)
	return have >= -shardBound/2 && have <= shardBound/2, nil
}

// count counts batch's fresh changes on s, each in full if the total stays within int64 (with what
// unapplied says its document's earlier changes left out), else as its document counting 0, else
// not at all; it returns each shard's deltas, preferring shard preferred.
func (s *shardValues) count(batch []change, fresh []int, unapplied map[string]*big.Int, preferred int) (sumPlan, map[int][]counter.TimedDelta) {
	plan := sumPlan{outOfRange: map[int]bool{}, unapplied: map[string]*big.Int{}}
	byShard := map[int][]counter.TimedDelta{}
	for _, i := range fresh {
		ch := batch[i]
		path := ch.write.Path
		u := plan.unapplied[path]
		if u == nil {
			u = cmp.Or(unapplied[path], new(big.Int))
		}
		full := new(big.Int).Add(big.NewInt(ch.delta), u)
		counted := new(big.Int).Sub(big.NewInt(ch.value-ch.delta), u) // what the document counts now
		for _, a := range []*big.Int{full, new(big.Int).Neg(counted), new(big.Int)} {
			if a.Sign() != 0 {
				shard, ok := s.place(a, preferred, -1)
				if !ok {
					continue
				}
				byShard[shard] = append(byShard[shard], counter.TimedDelta{At: ch.at, Delta: a.Int64()})
			}
			plan.outOfRange[i] = a.Cmp(full) != 0
			if next := new(big.Int).Sub(full, a); next.Cmp(u) != 0 || plan.unapplied[path] != nil {
				plan.unapplied[path] = next
			}
			break
		}
	}
	return plan, byShard
}

// recordUnapplied records in tx that counter id leaves u of the document at path out; 0: no record.
func (c *Counting) recordUnapplied(tx *firestore.Transaction, id, path string, u *big.Int) error {
	ref := c.unappliedRef(id, path)
	if u.Sign() == 0 {
		return tx.Delete(ref)
	}
	return tx.Set(ref, map[string]any{shared.FieldRefusedPath: path, shared.FieldRefusedUnapplied: u.String()})
}

// readUnapplied reads, within tx, the unapplied amounts of the documents of batch's fresh changes.
func (c *Counting) readUnapplied(tx *firestore.Transaction, id string, batch []change, fresh []int) (map[string]*big.Int, error) {
	var refs []*firestore.DocumentRef
	for _, i := range fresh {
		refs = append(refs, c.unappliedRef(id, batch[i].write.Path))
	}
	snaps, err := tx.GetAll(refs)
	if err != nil {
		return nil, fmt.Errorf("read what counter %q leaves uncounted: %w", id, err)
	}
	unapplied := map[string]*big.Int{}
	for _, snap := range snaps {
		if !snap.Exists() {
			continue
		}
		path, u, err := unappliedOf(snap)
		if err != nil {
			return nil, err
		}
		unapplied[path] = u
	}
	return unapplied, nil
}

// unappliedOf reads a record of SumRefusedCollection.
func unappliedOf(snap *firestore.DocumentSnapshot) (string, *big.Int, error) {
	path, _ := snap.Data()[shared.FieldRefusedPath].(string)
	text, _ := snap.Data()[shared.FieldRefusedUnapplied].(string)
	u, ok := new(big.Int).SetString(text, 10)
	if !ok || path == "" {
		return "", nil, fmt.Errorf("record %s: want a path and a decimal %q, got %v", snap.Ref.Path, shared.FieldRefusedUnapplied, snap.Data())
	}
	return path, u, nil
}

// unappliedRef is the record of what counter id leaves uncounted of the document at path.
func (c *Counting) unappliedRef(id, path string) *firestore.DocumentRef {
	sum := sha256.Sum256([]byte(path))
	return c.reader.CounterRef(id).Collection(shared.SumRefusedCollection).Doc(hex.EncodeToString(sum[:16]))
}

// shardValues are a sum counter's shards as one transaction read them, and their total.
type shardValues struct {
	live  []int64 // the shards writes go to: 0..NumShards-1
	total big.Int // of every shard, retired ones included
	stray bool    // a retired shard holds a value
}

// readShards reads, within tx, every shard of counter id, whose document tx read as counterSnap.
func (c *Counting) readShards(tx *firestore.Transaction, counterSnap *firestore.DocumentSnapshot, id string) (*shardValues, error) {
	shape, err := c.reader.ShapeOf(counterSnap)
	if err != nil {
		return nil, err
	}
	snaps, err := tx.Documents(c.collections.ShardsRef(id)).GetAll()
	if err != nil {
		return nil, fmt.Errorf("read the shards of counter %q: %w", id, err)
	}
	s := &shardValues{live: make([]int64, shape.NumShards)}
	for _, snap := range snaps {
		v, ok := snap.Data()[shared.FieldCount].(int64)
		if _, present := snap.Data()[shared.FieldCount]; present && !ok {
			return nil, fmt.Errorf("shard %s of counter %q holds %v, not an integer", snap.Ref.ID, id, snap.Data()[shared.FieldCount])
		}
		s.total.Add(&s.total, big.NewInt(v))
		if n, err := strconv.Atoi(snap.Ref.ID); err == nil && n >= 0 && n < len(s.live) {
			s.live[n] = v
		} else if v != 0 {
			s.stray = true
		}
	}
	return s, nil
}

// place adds a to a shard other than avoid, preferring preferred, keeping the total and that shard
// within int64 and as near 0 as it can; false, changing nothing, when no shard can take a.
func (s *shardValues) place(a *big.Int, preferred, avoid int) (int, bool) {
	next := new(big.Int).Add(&s.total, a)
	if !a.IsInt64() || !next.IsInt64() {
		return 0, false
	}
	delta := a.Int64()
	best, bestSize := -1, uint64(0)
	for n, v := range s.live {
		sum := v + delta
		if (sum > v) != (delta > 0) || n == avoid {
			continue
		}
		size := absolute(sum)
		if n == preferred && size <= shardBound {
			best = n
			break
		}
		if best < 0 || size < bestSize {
			best, bestSize = n, size
		}
	}
	if best < 0 {
		return 0, false
	}
	s.live[best] += delta
	s.total.Set(next)
	return best, true
}

// wide reports whether some shard holds more than shardBound.
func (s *shardValues) wide() bool {
	return s.stray || slices.ContainsFunc(s.live, func(v int64) bool { return absolute(v) > shardBound })
}

// absolute is |v|, MinInt64's included.
func absolute(v int64) uint64 {
	if v < 0 {
		return uint64(-(v + 1)) + 1
	}
	return uint64(v)
}

// unappliedAt is the sum of what counter id left out of its documents as of read time at.
func (c *Counting) unappliedAt(ctx context.Context, id string, at time.Time) (*big.Int, error) {
	sum := new(big.Int)
	err := c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		sum.SetInt64(0)
		records, err := tx.Documents(c.reader.CounterRef(id).Collection(shared.SumRefusedCollection)).GetAll()
		if err != nil {
			return err
		}
		for _, r := range records {
			_, u, err := unappliedOf(r)
			if err != nil {
				return err
			}
			sum.Add(sum, u)
		}
		return nil
	}, firestore.ReadOnly, firestore.TransactionReadTime(at))
	if err != nil {
		return nil, fmt.Errorf("read what counter %q leaves out at %s: %w", id, at.Format(time.RFC3339Nano), err)
	}
	return sum, nil
}

// maxReplacedRecords bounds the records one base completion deletes and creates, within
// Firestore's 500 writes a commit.
const maxReplacedRecords = 400

// baseSum is what a sum counter's base completion read: its shards, and the records it replaces.
type baseSum struct {
	shards  *shardValues
	records []*firestore.DocumentSnapshot
}

// readBaseSum reads, within tx, sum counter id's shards and records; tx read it as counterSnap.
func (c *Counting) readBaseSum(tx *firestore.Transaction, counterSnap *firestore.DocumentSnapshot, id string) (*baseSum, error) {
	shards, err := c.readShards(tx, counterSnap, id)
	if err != nil {
		return nil, err
	}
	records, err := tx.Documents(c.reader.CounterRef(id).Collection(shared.SumRefusedCollection)).GetAll()
	if err != nil {
		return nil, fmt.Errorf("read what counter %q leaves out: %w", id, err)
	}
	return &baseSum{shards: shards, records: records}, nil
}

// place spreads correction over the shards (in two halves when it leaves int64), and returns the
// counter's flags after it, over being the documents the base leaves out.
func (b *baseSum) place(id string, correction *big.Int, over map[string]int64) (map[int][]counter.TimedDelta, []firestore.Update, error) {
	half := new(big.Int).Quo(correction, big.NewInt(2))
	parts := []*big.Int{correction}
	if !correction.IsInt64() {
		parts = []*big.Int{half, new(big.Int).Sub(correction, half)} // the total stays within int64 between
	}
	byShard := map[int][]counter.TimedDelta{}
	used := -1 // the halves' sum leaves int64: one shard cannot take both
	for _, part := range parts {
		if part.Sign() == 0 {
			continue
		}
		shard, ok := b.shards.place(part, 0, used)
		if !ok {
			return nil, nil, fmt.Errorf("counter %q: no shard can take the base's correction %s", id, correction)
		}
		byShard[shard] = append(byShard[shard], counter.TimedDelta{Delta: part.Int64()})
		used = shard
	}
	return byShard, []firestore.Update{
		{Path: shared.FieldSumWide, Value: b.shards.wide()},
		{Path: shared.FieldSumRefused, Value: len(over) > 0},
	}, nil
}

// replaceRecords makes over's documents the records of what counter id leaves out, within tx.
func (b *baseSum) replaceRecords(c *Counting, tx *firestore.Transaction, id string, over map[string]int64) error {
	if len(b.records)+len(over) > maxReplacedRecords {
		return fmt.Errorf("counter %q: its documents' sum leaves int64 by %d documents, and %d records exist; one base replaces at most %d: remove documents, or split the counter", id, len(over), len(b.records), maxReplacedRecords)
	}
	kept := map[string]bool{}
	for path := range over {
		kept[c.unappliedRef(id, path).Path] = true
	}
	for _, r := range b.records {
		if kept[r.Ref.Path] {
			continue // set below: one write a document
		}
		if err := tx.Delete(r.Ref); err != nil {
			return err
		}
	}
	for path, n := range over {
		if err := c.recordUnapplied(tx, id, path, big.NewInt(n)); err != nil {
			return err
		}
	}
	return nil
}
