package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The Firestore emulator's data kept across restarts (LOCALSTACK_DATA): the stack starts the
// emulator on the latest export in the folder, and exports into it when it stops.

// exportPrefix starts the folders the emulator's export writes.
const exportPrefix = "firestore_export_"

// latestExport is the metadata file of the newest export in dir; "" when there is none.
func latestExport(dir string) (string, error) {
	exports, err := filepath.Glob(filepath.Join(dir, exportPrefix+"*", "*.overall_export_metadata"))
	if err != nil || len(exports) == 0 {
		return "", err
	}
	slices.Sort(exports) // the folder name ends in the export's Unix time
	return exports[len(exports)-1], nil
}

// exportFirestore writes project's documents into dir through the emulator at hostPort, then
// removes the older exports there.
func exportFirestore(ctx context.Context, hostPort, project, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export folder: %w", err)
	}
	before, err := filepath.Glob(filepath.Join(dir, exportPrefix+"*"))
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"database": "projects/" + project + "/databases/(default)", "export_directory": dir})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+hostPort+"/emulator/v1/projects/"+project+":export", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("export the Firestore emulator's data: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var answer bytes.Buffer
		_, _ = answer.ReadFrom(resp.Body)
		return fmt.Errorf("export the Firestore emulator's data: %s %s", resp.Status, strings.TrimSpace(answer.String()))
	}
	for _, old := range before {
		_ = os.RemoveAll(old)
	}
	return nil
}
