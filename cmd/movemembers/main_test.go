package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// TestMovesLegacyMembersOfCountersAndLeftovers: the command moves the member documents of a counter
// and of a deleted counter's leftovers from members to counter_members, marks the counter, and ends
// with a pass that finds nothing; the moved documents keep their fields.
func TestMovesLegacyMembersOfCountersAndLeftovers(t *testing.T) {
	ctx := context.Background()
	project := testenv.Project(t)
	client := testenv.FirestoreOf(t, project)
	t.Setenv("COUNTERS_COLLECTION", "")
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	counters := client.Collection("counters")
	if _, err := counters.Doc("c").Create(ctx, map[string]any{shared.FieldNumShards: 1, shared.FieldDistinct: true}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"c/members/a", "c/members/day_2026-11-01_a", "gone/members/b"} {
		if _, err := counters.Doc(path).Create(ctx, map[string]any{shared.FieldCreatedAt: created, shared.FieldMemberWrite: "w1"}); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	if err := run(ctx, []string{"-project", project, "-settle", "10ms"}, &out); err != nil {
		t.Fatalf("movemembers: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "pass 1: moved 3 member documents, marked 1 counters") || !strings.Contains(out.String(), "done") {
		t.Errorf("output:\n%s\nwant 3 moved, 1 marked, then done", out.String())
	}
	var moved []string
	for _, id := range []string{"c", "gone"} {
		for _, collection := range []string{shared.LegacyMembersCollection, shared.MembersCollection} {
			docs, err := counters.Doc(id).Collection(collection).Documents(ctx).GetAll()
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				if collection == shared.LegacyMembersCollection {
					t.Errorf("left under the old name: %s", d.Ref.Path)
				} else if at, _ := d.DataAt(shared.FieldCreatedAt); !created.Equal(at.(time.Time)) || d.Data()[shared.FieldMemberWrite] != "w1" {
					t.Errorf("%s moved as %v", d.Ref.Path, d.Data())
				}
				moved = append(moved, id+"/"+d.Ref.ID)
			}
		}
	}
	if want := []string{"c/a", "c/day_2026-11-01_a", "gone/b"}; !slices.Equal(moved, want) {
		t.Errorf("moved %v, want %v", moved, want)
	}
	snap, err := counters.Doc("c").Get(ctx)
	if err != nil || snap.Data()[shared.FieldMemberCollection] != shared.MembersCollection {
		t.Errorf("counter c after the move: %v, %v; want member_collection %q", snap.Data(), err, shared.MembersCollection)
	}
}
