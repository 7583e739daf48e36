package demomodel

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// The embedded copy must stay byte-identical to the reviewed model data under testdata/.
func TestEmbeddedMatchesTestdata(t *testing.T) {
	fsys, err := FS()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		got, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatalf("embedded %s: %v", name, err)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "models", "qwen3", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("embedded %s differs from testdata/models/qwen3/%s (%d vs %d bytes)", name, name, len(got), len(want))
		}
	}
}
