package localstack

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/sources"
)

// TestStackRulesCloseReadNoneRollups: the stack's rules close the roll-ups of a "read": "none"
// declaration, and stay as the file has them without one.
func TestStackRulesCloseReadNoneRollups(t *testing.T) {
	file := "../../firestore.example-app.rules"
	for _, c := range []struct {
		declared string
		closed   bool
	}{{`[{"documents": "shops/{shop}/orders/{o}", "counter": "revenue-{shop}", "sum": "amount", "read": "none"}]`, true},
		{`[{"documents": "shops/{shop}/orders/{o}", "counter": "revenue-{shop}", "sum": "amount"}]`, false}} {
		set, err := sources.Parse([]byte(c.declared), config.Default().Schema())
		if err != nil {
			t.Fatal(err)
		}
		text, err := stackRules(file, set)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(text, "allow get: if !isUnreadable(counterId);") && strings.Contains(text, "counterId.matches('revenue-[^/]+')"); got != c.closed {
			t.Errorf("%s: roll-ups closed %v, want %v:\n%s", c.declared, got, c.closed, text)
		}
	}
}

// TestFunctionsPortStepsAsideForAnAttachedEmulator: beside an Emulator Suite whose Firestore has
// 8080, the functions default to 8088; otherwise to 8080.
func TestFunctionsPortStepsAsideForAnAttachedEmulator(t *testing.T) {
	if got := functionsPortBeside("127.0.0.1:8080", "", ""); got != "8088" {
		t.Errorf("beside an emulator on 8080: %s, want 8088", got)
	}
	if got := functionsPortBeside("127.0.0.1:9000", "", "127.0.0.1:9099"); got != "8080" {
		t.Errorf("beside emulators elsewhere: %s, want 8080", got)
	}
}

// TestDevelopmentDocStatesTheEventsInFlight: docs/development.md's figure for the bridge's deliveries
// in flight is the one the bridge uses (eventsInFlight).
func TestDevelopmentDocStatesTheEventsInFlight(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("summed: %s)", groupThousands(eventsInFlight()))
	if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), want) {
		t.Errorf("docs/development.md does not say %q: the bridge keeps %d deliveries in flight", want, eventsInFlight())
	}
}

// groupThousands writes n with commas between groups of three digits, as the docs do.
func groupThousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
