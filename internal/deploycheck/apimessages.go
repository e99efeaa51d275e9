package deploycheck

import (
	"context"
	_ "embed"
	"fmt"
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
	results, err := runSDKPython[struct {
		File    string
		Unknown []string
	}](ctx, nil, "", apiMessages, files)
	if err != nil {
		return nil, fmt.Errorf("API message check: %w", err)
	}
	var problems []string
	for _, r := range results {
		for _, u := range r.Unknown {
			problems = append(problems, fmt.Sprintf("%s: %s is not a field (or not a value) of the API", r.File, u))
		}
	}
	return problems, nil
}
