package main

import (
	"fmt"
	"testing"
)

func TestParseIncrements(t *testing.T) {
	got, err := parseIncrements([]string{"likes", "views:3", "a:b:-2"})
	if want := "[{likes 1} {views 3} {a:b -2}]"; err != nil || fmt.Sprint(got) != want {
		t.Errorf("parseIncrements = %v, %v; want %s", got, err, want)
	}
	for _, bad := range [][]string{nil, {"likes:x"}, {"likes:1.5"}} {
		if got, err := parseIncrements(bad); err == nil {
			t.Errorf("parseIncrements(%q) = %v, want an error", bad, got)
		}
	}
}
