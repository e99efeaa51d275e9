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

// EnvRulesFile names the security rules file that the local stack loaded into the Firestore emulator
// for its own project; tests load the same file into each project they create (internal/testenv).
const EnvRulesFile = "LOCALSTACK_RULES_FILE"

// LoadRulesFile reads the security rules at path and loads them into the Firestore emulator at
// hostPort for project. Until a project has rules, the emulator lets every client SDK read and write
// everything in it, unlike production; once loaded, the Firebase client SDKs are held to them (server
// libraries bypass rules, there as in production).
func LoadRulesFile(ctx context.Context, hostPort, project, path string) error {
	rules, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("security rules: %w", err)
	}
	return LoadRules(ctx, hostPort, project, string(rules))
}

// LoadRules loads rules (the text of a firestore.rules file) into the Firestore emulator at hostPort
// for project. The emulator refuses rules that do not compile, with the reason, which is returned.
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
