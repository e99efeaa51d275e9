package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesAreCurrent: every committed generated file is what the generator writes from
// today's declarations.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := Render(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Outputs {
		committed, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, files[name]) {
			t.Errorf("%s is stale: run `go generate ./...` and commit the result", name)
		}
	}
}
