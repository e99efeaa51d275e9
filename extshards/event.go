package extshards

import (
	"path"
	"strings"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
)

// NeedsFold says whether a shard or partial from a write event (nil after a delete) holds anything
// to fold: a non-zero number, nested included, or a partial's _updates_ entries.
func NeedsFold(doc *firestorepb.Document) bool {
	if doc == nil {
		return false
	}
	if strings.HasPrefix(path.Base(doc.GetName()), partialPrefix) {
		return len(doc.GetFields()[updatesField].GetArrayValue().GetValues()) > 0
	}
	return holdsNonZero(doc.GetFields())
}

func holdsNonZero(fields map[string]*firestorepb.Value) bool {
	for _, v := range fields {
		switch t := v.GetValueType().(type) {
		case *firestorepb.Value_IntegerValue:
			if t.IntegerValue != 0 {
				return true
			}
		case *firestorepb.Value_DoubleValue:
			if t.DoubleValue != 0 {
				return true
			}
		case *firestorepb.Value_MapValue:
			if holdsNonZero(t.MapValue.GetFields()) {
				return true
			}
		}
	}
	return false
}
