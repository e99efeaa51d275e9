package emulators

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"
)

// EnvRulesFile names the rules file the local stack loaded; tests load it into their projects too.
const EnvRulesFile = "LOCALSTACK_RULES_FILE"

// LoadRulesFile loads the security rules at path as LoadRules does. Until then the emulator lets
// client SDKs read and write everything, unlike production.
func LoadRulesFile(ctx context.Context, hostPort, project, path string) error {
	rules, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("security rules: %w", err)
	}
	return LoadRules(ctx, hostPort, project, string(rules))
}

// LoadRules loads rules (firestore.rules text) into the Firestore emulator at hostPort for project;
// rules that do not compile are an error giving the reason.
func LoadRules(ctx context.Context, hostPort, project, rules string) error {
	body, err := json.Marshal(map[string]any{
		"rules": map[string]any{"files": []map[string]string{{"name": "firestore.rules", "content": rules}}},
	})
	if err != nil {
		return fmt.Errorf("encode security rules: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u := "http://" + hostPort + "/emulator/v1/projects/" + url.PathEscape(project) + ":securityRules"
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("load security rules: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("load security rules for project %s: %w", project, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("load security rules for project %s: the emulator answered %s: %s", project, resp.Status, answer)
	}
	return nil
}
