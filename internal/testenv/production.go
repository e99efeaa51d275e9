package testenv

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/shardcount/counters/internal/emulators"
)

// OutsideEmulatorMode makes Firebase Admin SDK clients t creates behave as in production: no Auth
// emulator, and default credentials of a made-up service account of project.
func OutsideEmulatorMode(t *testing.T, project string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": project, "private_key_id": "k1", "client_id": "1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "functions@" + project + ".iam.gserviceaccount.com",
		"token_uri":    "https://oauth2.googleapis.com/token",
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "credentials.json")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(emulators.AuthHostEnv, "")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
}
