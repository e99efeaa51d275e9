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
	plan, parts := shards.count(batch, fresh, unapplied)
	counts := shards.balanced()
	if err := w.SetCounts(counts, parts); err != nil {
		return sumPlan{}, err
	}
	if nowWide := wideCounts(counts); nowWide != wide {
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

// count counts batch's fresh changes on s's total, each in full if it stays within int64 (with
// what unapplied says its document's earlier changes left out), else as its document counting 0,
// else not at all; it returns the deltas counted, for the window buckets.
func (s *shardValues) count(batch []change, fresh []int, unapplied map[string]*big.Int) (sumPlan, []counter.TimedDelta) {
	plan := sumPlan{outOfRange: map[int]bool{}, unapplied: map[string]*big.Int{}}
	var parts []counter.TimedDelta
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
			next := new(big.Int).Add(&s.total, a)
			if !a.IsInt64() || !next.IsInt64() {
				continue
			}
			s.total.Set(next)
			if a.Sign() != 0 {
				parts = append(parts, counter.TimedDelta{At: ch.at, Delta: a.Int64()})
			}
			plan.outOfRange[i] = a.Cmp(full) != 0
			if left := new(big.Int).Sub(full, a); left.Cmp(u) != 0 || plan.unapplied[path] != nil {
				plan.unapplied[path] = left
			}
			break
		}
	}
	return plan, parts
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

// shardValues are a sum counter's shards as one transaction read them: how many take writes, the
// documents there are, and their total.
type shardValues struct {
	live   int
	counts map[int]int64 // of every shard document, retired ones included
	total  big.Int
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
	s := &shardValues{live: shape.NumShards, counts: map[int]int64{}}
	for _, snap := range snaps {
		v, ok := snap.Data()[shared.FieldCount].(int64)
		n, err := strconv.Atoi(snap.Ref.ID)
		if _, present := snap.Data()[shared.FieldCount]; present && !ok || err != nil {
			return nil, fmt.Errorf("shard %s of counter %q: want a decimal ID and an integer count, got %v", snap.Ref.ID, id, snap.Data()[shared.FieldCount])
		}
		s.total.Add(&s.total, big.NewInt(v))
		s.counts[n] = v
	}
	return s, nil
}

// balanced are the counts that spread s's total evenly over its live shards, and 0 for the other
// documents: all of one sign, so that however a sum of shards adds them up, it stays within int64.
func (s *shardValues) balanced() map[int]int64 {
	counts := map[int]int64{}
	for n := range s.counts {
		counts[n] = 0
	}
	quotient, remainder := new(big.Int).QuoRem(&s.total, big.NewInt(int64(s.live)), new(big.Int))
	for n := range s.live {
		counts[n] = quotient.Int64()
		if int64(n) < absolute(remainder.Int64()) {
			counts[n] += int64(remainder.Sign())
		}
	}
	return counts
}

// wideCounts reports whether some count is past ±shardBound.
func wideCounts(counts map[int]int64) bool {
	for _, v := range counts {
		if v < -shardBound || v > shardBound {
			return true
		}
	}
	return false
}

// absolute is |v| for v > MinInt64.
func absolute(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
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

// counts are the shards' counts after a base of value, and the counter's flags then, over being
// the documents the base leaves out. Counts are nil when one increment, on any shard, keeps every
// shard within ±shardBound (a new counter's base): no shard is rewritten then.
func (b *baseSum) counts(value int64, over map[string]int64) (map[int]int64, []firestore.Update) {
	flags := func(wide bool) []firestore.Update {
		return []firestore.Update{{Path: shared.FieldSumWide, Value: wide}, {Path: shared.FieldSumRefused, Value: len(over) > 0}}
	}
	correction := new(big.Int).Sub(big.NewInt(value), &b.shards.total)
	small := func(v int64) bool { return v >= -shardBound && v <= shardBound }
	if correction.IsInt64() && small(correction.Int64()) && !slices.ContainsFunc(slices.Collect(maps.Values(b.shards.counts)), func(v int64) bool {
		return !small(v) || !small(v+correction.Int64())
	}) {
		return nil, flags(false)
	}
	b.shards.total.SetInt64(value)
	counts := b.shards.balanced()
	return counts, flags(wideCounts(counts))
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
