package shellwords

import "testing"

func TestJoinQuotesWhatTheShellWouldSplitOrExpand(t *testing.T) {
	got := Join([]string{"bench", "-faults", "none;reset=0.02", "", "it's", "plain"})
	want := `bench -faults 'none;reset=0.02' '' 'it'\''s' plain`
	if got != want {
		t.Errorf("Join = %s, want %s", got, want)
	}
}
