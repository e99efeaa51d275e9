package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// LogBuffer collects JSON log lines; it is safe for concurrent use.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Lines decodes the lines so far as JSONLines does.
func (l *LogBuffer) Lines(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	text := l.b.String()
	l.mu.Unlock()
	return JSONLines(t, text)
}

// JSONLines decodes each non-blank line of logs as a JSON object, failing t on one that is not.
func JSONLines(t testing.TB, logs string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, line)
	}
	return lines
}
