package callerauth

import (
	"testing"
	"time"
)

// TestUserCacheIsBoundedInTimeAndSize: a state is reused for ttl only, and a full cache makes room
// instead of growing.
func TestUserCacheIsBoundedInTimeAndSize(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := newUserCache(30*time.Second, 3)
	c.now = func() time.Time { return now }
	c.put("ann", userState{exists: true})
	if _, ok := c.get("ann"); !ok {
		t.Fatal("ann not cached")
	}
	now = now.Add(30 * time.Second)
	if _, ok := c.get("ann"); ok {
		t.Error("ann's state reused after its ttl")
	}
	for _, uid := range []string{"a", "b", "c", "d", "e"} {
		c.put(uid, userState{exists: true})
		if len(c.users) > 3 {
			t.Fatalf("%d users cached, want at most 3", len(c.users))
		}
	}
	if _, ok := c.get("e"); !ok {
		t.Error("the last user put is not cached")
	}
	none := newUserCache(0, 3)
	none.put("ann", userState{exists: true})
	if _, ok := none.get("ann"); ok {
		t.Error("a zero ttl cached a state")
	}
}
