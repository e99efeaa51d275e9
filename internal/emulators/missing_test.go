package emulators

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestMissingJavaIsNamed: without Java on the PATH, starting either emulator fails at once and says
// what to install (internal/localstack checks the same through the built binary, without -short).
func TestMissingJavaIsNamed(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, k := range []Kind{Firestore(), PubSub()} {
		e, err := Start(context.Background(), k, "127.0.0.1:1", io.Discard, time.Second)
		if err == nil {
			e.Stop()
			t.Fatalf("the %s emulator started without Java on PATH", k.Name)
		}
		if !strings.Contains(err.Error(), "Java 17") || !strings.Contains(err.Error(), "install") {
			t.Errorf("%s: %v; want it to say to install Java 17", k.Name, err)
		}
	}
}
