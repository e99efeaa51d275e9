// Package cloudlog writes slog records as JSON lines for Cloud Logging.
//
// Not a supported import: see package counters.
package cloudlog

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// LevelCritical is Cloud Logging's CRITICAL severity, above slog's ERROR.
const LevelCritical = slog.LevelError + 4

// ParseLevel reads DEBUG, INFO, WARNING (or WARN) or ERROR, case-insensitively.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToUpper(s) {
	case "DEBUG":
		return slog.LevelDebug, nil
	case "INFO", "":
		return slog.LevelInfo, nil
	case "WARNING", "WARN":
		return slog.LevelWarn, nil
	case "ERROR":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q: must be DEBUG, INFO, WARNING or ERROR", s)
}

// New logs JSON lines with Cloud Logging's "severity" and "message" keys.
func New(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			// Rename only slog's own attributes, not a caller's "level" or "msg".
			switch level, isLevel := a.Value.Any().(slog.Level); {
			case a.Key == slog.MessageKey && a.Value.Kind() == slog.KindString:
				a.Key = "message"
			case a.Key == slog.LevelKey && isLevel:
				a.Key = "severity"
				a.Value = slog.StringValue(severity(level))
			}
			return a
		},
	}))
}

func severity(l slog.Level) string {
	switch {
	case l >= LevelCritical:
		return "CRITICAL"
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARNING"
	case l >= slog.LevelInfo:
		return "INFO"
	}
	return "DEBUG"
}
