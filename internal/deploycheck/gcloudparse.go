package deploycheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// noAccount is what gcloud says once a command's arguments have parsed and it needs credentials.
const noAccount = "You do not currently have an active account selected"

// GcloudParses runs every command (its words, the first being "gcloud") through the installed
// gcloud with an empty configuration (no account, no project), parallel at a time, and returns one
// problem per command gcloud refuses before it asks for credentials: a usage error, an unknown flag,
// a resource argument it cannot parse. Nothing reaches Google: without an account gcloud stops there.
func GcloudParses(ctx context.Context, commands [][]string, parallel int) ([]string, error) {
	config, err := os.MkdirTemp("", "gcloud-config-")
	if err != nil {
		return nil, fmt.Errorf("gcloud config dir: %w", err)
	}
	defer os.RemoveAll(config)
	env := append(os.Environ(), "CLOUDSDK_CONFIG="+config, "CLOUDSDK_CORE_DISABLE_PROMPTS=1",
		"CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1", "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1")
	// gcloud writes its config dir on first use: do it once, not from every parallel run.
	if out, err := gcloud(ctx, env, "config", "list").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gcloud config list: %v: %s", err, out)
	}

	problems := make([]string, len(commands))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, words := range commands {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out, _ := gcloud(ctx, env, words[1:]...).CombinedOutput()
			if !strings.Contains(string(out), noAccount) {
				problems[i] = fmt.Sprintf("gcloud refuses %s\n%s", quoteWords(words), firstLines(string(out), 4))
			}
		})
	}
	wg.Wait()
	var refused []string
	for _, p := range problems {
		if p != "" {
			refused = append(refused, p)
		}
	}
	return refused, ctx.Err()
}

func gcloud(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "gcloud", args...)
	cmd.Env = env
	cmd.Dir = os.TempDir() // nothing of the repository is read or uploaded
	return cmd
}

// quoteWords prints words as a shell command line.
func quoteWords(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = w
		if w == "" || strings.ContainsAny(w, " '\"$*(){}|;&<>") {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// Commands returns the commands of a dry-run listing as words, skipping "#" comments and blank lines.
func Commands(listing string) ([][]string, error) {
	var commands [][]string
	for n, line := range strings.Split(listing, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words, err := SplitWords(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		commands = append(commands, words)
	}
	return commands, nil
}

// FencedGcloudCommands returns the gcloud command lines inside the fenced code blocks of a Markdown
// text (a line ending in a backslash continues), and how many it left out because they use the
// shell (variables, substitutions, pipes) and so cannot be checked as written.
func FencedGcloudCommands(markdown string) (commands [][]string, skipped int) {
	inFence := false
	var pending string
	for _, line := range strings.Split(markdown, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inFence, pending = !inFence, ""
			continue
		}
		if !inFence {
			continue
		}
		if pending != "" {
			trimmed = pending + " " + trimmed
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			pending = strings.TrimSpace(cont)
			continue
		}
		pending = ""
		if code, _, _ := strings.Cut(trimmed, " #"); strings.HasPrefix(code, "gcloud ") {
			words, err := SplitWords(strings.TrimSpace(code))
			if err != nil {
				skipped++
				continue
			}
			commands = append(commands, words)
		}
	}
	return commands, skipped
}
