package sources

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared/wire"
)

// ProbeID fills every wildcard of a declaration's probe document ("canary": true), and names the
// probe's nonce field.
const ProbeID = wire.ReservedCounterPrefix + "canary"

// Fields of a declaration's liveness record: the nonce the last probe sent, and the last nonce
// the trigger saw (only SeeProbe writes it), each with its time.
const (
	fieldSent   = "sent"
	fieldSentAt = "sent_at"
	fieldSeen   = "seen"
	fieldSeenAt = "seen_at"
)

// ProbePath is d's probe document: its documents pattern with every wildcard ProbeID
// ("posts/_counters_canary/likes/_counters_canary").
func (d *Declaration) ProbePath() string {
	segs := make([]string, len(d.pattern))
	for i, seg := range d.pattern {
		if _, ok := wildcard(seg); ok {
			seg = ProbeID
		}
		segs[i] = seg
	}
	return strings.Join(segs, "/")
}

// isProbe reports whether path is the probe document of a declaration that opted in: no
// declaration counts it.
func (s *Set) isProbe(path string) bool {
	if !strings.Contains(path, ProbeID) {
		return false // every probe path holds ProbeID: other writes build no probe path
	}
	for _, d := range s.Declarations {
		if d.Canary && d.ProbePath() == path {
			return true
		}
	}
	return false
}

// probeParent reports whether bound (p's wildcards, bound by a document) puts the document under a
// parent that exists only for a probe: p has parent wildcards, each bound to ProbeID.
func (p pattern) probeParent(bound map[string]string) bool {
	n := 0
	for _, seg := range p[:len(p)-1] {
		if name, ok := wildcard(seg); ok {
			if bound[name] != ProbeID {
				return false
			}
			n++
		}
	}
	return n > 0
}

// checkCanaries refuses a probe document that a counter's count() would hold though Count counts
// it nowhere: one in a real collection (flat, or under a literal document) that a declaration
// counts whole, without where, sum or counter fields.
func checkCanaries(decls []*Declaration) error {
	for i, d := range decls {
		for j, o := range decls {
			bound, ok := o.pattern.match(d.ProbePath())
			if d.Canary && ok && len(o.Where) == 0 && o.Sum == "" && len(o.counterFields()) == 0 && !o.pattern.probeParent(bound) {
				return fmt.Errorf("entry %d (%q): canary: its probe document %s would be one of the documents entry %d counts whole; "+
					"count documents under a parent document, filter them (where) or key them by a field, or leave canary off", i, d.Documents, d.ProbePath(), j)
			}
		}
	}
	return nil
}

// Probe is one check of a declaration's trigger (ProbeTriggers): Fresh when the trigger saw the
// previous probe, Checked false before the first. CheckErr says why the check failed (it reads
// stale, and no probe is sent); SendErr why the new probe was not sent (the next check reads stale).
type Probe struct {
	Declaration, Document string
	Checked, Fresh        bool
	CheckErr, SendErr     error
}

// ProbeTriggers checks, for each declaration that opted in, whether its trigger saw the nonce the
// last probe sent (its record in records, named by the counter template), records a new nonce as
// sent, and writes it into the probe document. The check and the new nonce commit together, so a
// probe never sent reads stale at the next check.
func (c *Counting) ProbeTriggers(ctx context.Context, records *firestore.CollectionRef) []Probe {
	var probes []Probe
	for _, d := range c.set.Declarations {
		if d.Canary {
			probes = append(probes, c.probe(ctx, records.Doc(d.source()), d))
		}
	}
	return probes
}

// probe is ProbeTriggers of d, whose record is ref.
func (c *Counting) probe(ctx context.Context, ref *firestore.DocumentRef, d *Declaration) Probe {
	p := Probe{Declaration: d.source(), Document: d.ProbePath()}
	nonce := rand.Text()
	err := c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(ref)
		p.Checked, p.Fresh = err == nil, false
		if err == nil {
			sent, _ := snap.Data()[fieldSent].(string)
			p.Fresh = sent != "" && snap.Data()[fieldSeen] == sent
		} else if status.Code(err) != codes.NotFound {
			return err
		}
		return tx.Set(ref, map[string]any{fieldSent: nonce, fieldSentAt: firestore.ServerTimestamp}, firestore.Merge([]string{fieldSent}, []string{fieldSentAt}))
	})
	if err != nil {
		p.Checked, p.Fresh, p.CheckErr = true, false, fmt.Errorf("check the trigger's probe record %s: %w", ref.Path, err)
		return p
	}
	if _, err := c.client.Doc(p.Document).Set(ctx, map[string]any{ProbeID: nonce}); err != nil {
		p.SendErr = fmt.Errorf("write the probe document %s: %w", p.Document, err)
	}
	return p
}

// SeeProbe is the trigger's side of ProbeTriggers: when w writes a probe document, it records the
// nonce w carries as seen by each declaration that opted in and last sent it, and reports true;
// Count counts that write nowhere. A nonce not sent last (an old event, another writer's) is
// ignored.
func (c *Counting) SeeProbe(ctx context.Context, records *firestore.CollectionRef, w Write) (bool, error) {
	if !c.set.isProbe(w.Path) {
		return false, nil
	}
	nonce := w.New.GetFields()[ProbeID].GetValueType()
	sv, ok := nonce.(*firestorepb.Value_StringValue)
	if !ok {
		return true, nil // deleted, or no nonce
	}
	for _, d := range c.set.Declarations {
		if !d.Canary || d.ProbePath() != w.Path {
			continue
		}
		ref := records.Doc(d.source())
		err := c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			snap, err := tx.Get(ref)
			if err != nil || snap.Data()[fieldSent] != sv.StringValue || snap.Data()[fieldSeen] == sv.StringValue {
				return ignoreNotFound(err)
			}
			return tx.Update(ref, []firestore.Update{{Path: fieldSeen, Value: sv.StringValue}, {Path: fieldSeenAt, Value: firestore.ServerTimestamp}})
		})
		if err != nil {
			return true, fmt.Errorf("record the probe of %s as seen: %w", d.source(), err)
		}
	}
	return true, nil
}

// ignoreNotFound is err unless it is NotFound.
func ignoreNotFound(err error) error {
	if status.Code(err) == codes.NotFound {
		return nil
	}
	return err
}
