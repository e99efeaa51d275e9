package deploycheck

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed apimessages.py
var apiMessages string

// APIFile is a JSON file of an API resource; Kind is "metric", "policy", "dashboard", "service"
// or "slo".
type APIFile struct {
	Kind, Path string
}

// APIMessageProblems reads each file with the installed gcloud's API message classes and returns
// one problem per field or enum value the API does not define.
func APIMessageProblems(ctx context.Context, files []APIFile) ([]string, error) {
	pairs := make([][2]string, len(files))
	for i, f := range files {
		pairs[i] = [2]string{f.Kind, f.Path}
	}
	out, _, err := runSDKPython(ctx, nil, "", apiMessages, pairs)
	if err != nil {
		return nil, fmt.Errorf("API message check: %w", err)
	}
	var problems []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			File    string
			Unknown []string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("API message check output %q: %w", line, err)
		}
		for _, u := range r.Unknown {
			problems = append(problems, fmt.Sprintf("%s: %s is not a field (or not a value) of the API", r.File, u))
		}
	}
	return problems, nil
}
