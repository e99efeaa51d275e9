package cloudlog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// decodeLines decodes every JSON line that buf holds.
func decodeLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestNewSeverityAndMessage(t *testing.T) {
	tests := []struct {
		name         string
		level        slog.Level
		wantSeverity string
	}{
		{name: "debug", level: slog.LevelDebug, wantSeverity: "DEBUG"},
		{name: "below debug", level: slog.LevelDebug - 4, wantSeverity: "DEBUG"},
		{name: "between debug and info", level: slog.LevelInfo - 1, wantSeverity: "DEBUG"},
		{name: "info", level: slog.LevelInfo, wantSeverity: "INFO"},
		{name: "warn", level: slog.LevelWarn, wantSeverity: "WARNING"},
		{name: "error", level: slog.LevelError, wantSeverity: "ERROR"},
		{name: "between error and critical", level: slog.LevelError + 2, wantSeverity: "ERROR"},
		{name: "critical", level: LevelCritical, wantSeverity: "CRITICAL"},
		{name: "above critical", level: LevelCritical + 4, wantSeverity: "CRITICAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := New(&buf, slog.LevelDebug-8)
			log.Log(context.Background(), tt.level, "hello "+tt.name, "counter", "likes", "delta", 3)
			lines := decodeLines(t, &buf)
			if len(lines) != 1 {
				t.Fatalf("got %d log lines, want 1: %q", len(lines), buf.String())
			}
			m := lines[0]
			if got := m["severity"]; got != tt.wantSeverity {
				t.Errorf("severity = %v, want %q (line %q)", got, tt.wantSeverity, buf.String())
			}
			if got := m["message"]; got != "hello "+tt.name {
				t.Errorf("message = %v, want %q", got, "hello "+tt.name)
			}
			for _, key := range []string{"level", "msg"} {
				if _, ok := m[key]; ok {
					t.Errorf("line has key %q, want only severity/message: %q", key, buf.String())
				}
			}
			if _, ok := m["time"]; !ok {
				t.Errorf("line has no time: %q", buf.String())
			}
			if m["counter"] != "likes" || m["delta"] != float64(3) {
				t.Errorf("attributes counter=%v delta=%v, want likes 3", m["counter"], m["delta"])
			}
		})
	}
}

func TestNewConvenienceMethods(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, slog.LevelDebug)
	log.Debug("d")
	log.Info("i")
	log.Warn("w")
	log.Error("e")
	log.Log(context.Background(), LevelCritical, "c")
	lines := decodeLines(t, &buf)
	want := []struct{ severity, message string }{
		{"DEBUG", "d"}, {"INFO", "i"}, {"WARNING", "w"}, {"ERROR", "e"}, {"CRITICAL", "c"},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d: %q", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		t.Run(w.severity, func(t *testing.T) {
			m := lines[i]
			if m["severity"] != w.severity || m["message"] != w.message {
				t.Errorf("line %d = severity %v message %v, want %s %s", i, m["severity"], m["message"], w.severity, w.message)
			}
			if _, ok := m["level"]; ok {
				t.Errorf("line %d has key level", i)
			}
			if _, ok := m["msg"]; ok {
				t.Errorf("line %d has key msg", i)
			}
		})
	}
}

func TestNewLevelFiltering(t *testing.T) {
	all := []struct {
		level    slog.Level
		severity string
	}{
		{slog.LevelDebug, "DEBUG"},
		{slog.LevelInfo, "INFO"},
		{slog.LevelWarn, "WARNING"},
		{slog.LevelError, "ERROR"},
		{LevelCritical, "CRITICAL"},
	}
	tests := []struct {
		name string
		min  slog.Level
		want []string
	}{
		{name: "debug logs everything", min: slog.LevelDebug, want: []string{"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}},
		{name: "info drops debug", min: slog.LevelInfo, want: []string{"INFO", "WARNING", "ERROR", "CRITICAL"}},
		{name: "warn", min: slog.LevelWarn, want: []string{"WARNING", "ERROR", "CRITICAL"}},
		{name: "error", min: slog.LevelError, want: []string{"ERROR", "CRITICAL"}},
		{name: "critical", min: LevelCritical, want: []string{"CRITICAL"}},
		{name: "above critical logs nothing", min: LevelCritical + 1, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := New(&buf, tt.min)
			for _, l := range all {
				log.Log(context.Background(), l.level, "m")
			}
			var got []string
			for _, m := range decodeLines(t, &buf) {
				s, _ := m["severity"].(string)
				got = append(got, s)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("logged severities %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewGroupedKeysUntouched(t *testing.T) {
	// Only the top-level built-in keys are renamed; keys inside a group are the caller's.
	var buf bytes.Buffer
	log := New(&buf, slog.LevelInfo)
	log.Info("top", slog.Group("req", slog.String("msg", "inner"), slog.Int("level", 2)))
	lines := decodeLines(t, &buf)
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1", len(lines))
	}
	req, ok := lines[0]["req"].(map[string]any)
	if !ok {
		t.Fatalf("req group = %v, want an object", lines[0]["req"])
	}
	if req["msg"] != "inner" || req["level"] != float64(2) {
		t.Errorf("req group = %v, want msg=inner level=2", req)
	}
	if lines[0]["message"] != "top" || lines[0]["severity"] != "INFO" {
		t.Errorf("line = %v, want message=top severity=INFO", lines[0])
	}
}

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{in: "DEBUG", want: slog.LevelDebug},
		{in: "debug", want: slog.LevelDebug},
		{in: "Debug", want: slog.LevelDebug},
		{in: "INFO", want: slog.LevelInfo},
		{in: "info", want: slog.LevelInfo},
		{in: "", want: slog.LevelInfo},
		{in: "WARNING", want: slog.LevelWarn},
		{in: "warning", want: slog.LevelWarn},
		{in: "WARN", want: slog.LevelWarn},
		{in: "warn", want: slog.LevelWarn},
		{in: "ERROR", want: slog.LevelError},
		{in: "error", want: slog.LevelError},
		{in: "CRITICAL", wantErr: true},
		{in: "TRACE", wantErr: true},
		{in: "verbose", wantErr: true},
		{in: " INFO", wantErr: true},
		{in: "0", wantErr: true},
	}
	for _, tt := range tests {
		name := tt.in
		if name == "" {
			name = "empty"
		}
		t.Run(name, func(t *testing.T) {
			got, err := ParseLevel(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseLevel(%q) = %v, nil; want error", tt.in, got)
				}
				if !strings.Contains(err.Error(), "DEBUG, INFO, WARNING or ERROR") {
					t.Errorf("error %q does not list the allowed levels", err)
				}
				if !strings.Contains(err.Error(), `"`+tt.in+`"`) {
					t.Errorf("error %q does not quote the input %q", err, tt.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLevel(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseLevel(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestLevelCritical(t *testing.T) {
	if LevelCritical <= slog.LevelError {
		t.Errorf("LevelCritical = %v, want above slog.LevelError", LevelCritical)
	}
}

func TestNewCallerLevelAttributeIsKept(t *testing.T) {
	// A caller's own "level" attribute (say, from request data) must neither panic nor be renamed.
	var buf bytes.Buffer
	New(&buf, slog.LevelInfo).Warn("hot", "level", "high")
	lines := decodeLines(t, &buf)
	if len(lines) != 1 || lines[0]["severity"] != "WARNING" || lines[0]["level"] != "high" {
		t.Errorf("lines = %v, want severity=WARNING and level=high", lines)
	}
}
