package functions

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeBuild fails with the errors in fails, one per build, then succeeds; it counts its builds.
type fakeBuild struct {
	fails  []error
	builds int
}

func (b *fakeBuild) build() (string, error) {
	b.builds++
	if b.builds <= len(b.fails) {
		return "", b.fails[b.builds-1]
	}
	return "service", nil
}

// TestStartupRetriesTransientFailuresAfterABackoff: a failed start is not kept for the instance's
// life; the first call after the backoff builds again, and calls within it do not.
func TestStartupRetriesTransientFailuresAfterABackoff(t *testing.T) {
	transient := errors.New("fetch App Check keys: connection reset")
	b := &fakeBuild{fails: []error{transient, transient}}
	now := time.Unix(0, 0)
	s := newStartup(b.build)
	s.now = func() time.Time { return now }

	steps := []struct {
		after      time.Duration
		wantErr    bool
		wantBuilds int
	}{
		{0, true, 1},                      // first failure: backoff 1 s
		{500 * time.Millisecond, true, 1}, // within the backoff: the same failure, no build
		{600 * time.Millisecond, true, 2}, // past it: builds, fails again: backoff 2 s
		{time.Second, true, 2},
		{1100 * time.Millisecond, false, 3}, // past it: started
		{time.Hour, false, 3},               // and kept
	}
	for i, step := range steps {
		now = now.Add(step.after)
		v, err := s.get()
		if (err != nil) != step.wantErr || b.builds != step.wantBuilds {
			t.Fatalf("step %d: get = %q, %v after %d builds; want error %v after %d builds", i, v, err, b.builds, step.wantErr, step.wantBuilds)
		}
	}
}

// TestStartupConfigErrorFailsAtOnceForever: a configuration error is never retried.
func TestStartupConfigErrorFailsAtOnceForever(t *testing.T) {
	b := &fakeBuild{fails: []error{&configError{errors.New("MAX_DELTA=x: must be an integer")}}}
	now := time.Unix(0, 0)
	s := newStartup(b.build)
	s.now = func() time.Time { return now }
	for range 3 {
		now = now.Add(time.Hour)
		var config *configError
		if _, err := s.get(); !errors.As(err, &config) {
			t.Fatalf("get = %v, want the configuration error", err)
		}
	}
	if b.builds != 1 {
		t.Errorf("%d builds, want 1", b.builds)
	}
}

// TestStartupBackoffIsBounded: the backoff doubles up to a minute.
func TestStartupBackoffIsBounded(t *testing.T) {
	b := &fakeBuild{fails: make([]error, 20)}
	for i := range b.fails {
		b.fails[i] = errors.New("transient")
	}
	now := time.Unix(0, 0)
	s := newStartup(b.build)
	s.now = func() time.Time { return now }
	for range 12 {
		_, _ = s.get()
		now = s.retryAt
	}
	if s.backoff != maxStartBackoff {
		t.Errorf("backoff %s after 12 failures, want %s", s.backoff, maxStartBackoff)
	}
}

// TestEmulatorSwitchesStopADeployedFunction: on Cloud Run (K_SERVICE set) any *_EMULATOR_HOST with a
// value is a configuration error naming each such variable, before anything is built; without
// K_SERVICE (the local stack, the tests) they are the point.
func TestEmulatorSwitchesStopADeployedFunction(t *testing.T) {
	deployed := []string{"K_SERVICE=increment", "PATH=/usr/bin", "FIREBASE_AUTH_EMULATOR_HOST=10.0.0.9:9099",
		"FIRESTORE_EMULATOR_HOST=10.0.0.9:8080", "PUBSUB_EMULATOR_HOST=", "GOOGLE_CLOUD_PROJECT=p"}
	s, err := newInstance(deployed)
	var config *configError
	if s != nil || !errors.As(err, &config) {
		t.Fatalf("newInstance = %v, %v; want a configuration error", s, err)
	}
	for _, name := range []string{"FIREBASE_AUTH_EMULATOR_HOST", "FIRESTORE_EMULATOR_HOST"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if strings.Contains(err.Error(), "PUBSUB_EMULATOR_HOST") {
		t.Errorf("error %q names PUBSUB_EMULATOR_HOST, which is empty", err)
	}
	if got := emulatorSwitches(deployed[1:]); got != nil {
		t.Errorf("without K_SERVICE: %v, want none refused", got)
	}
	if got := emulatorSwitches([]string{"K_SERVICE=count", "FIRESTORE_DATABASE=(default)"}); got != nil {
		t.Errorf("deployed without emulator variables: %v, want none refused", got)
	}
}
