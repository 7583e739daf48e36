package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRunWritesEveryStandIn: the documented command writes each stand-in's files.
func TestRunWritesEveryStandIn(t *testing.T) {
	for _, name := range []string{"glm4/glm-4.6", "glm4/glm-4.7-flash", "kimi_k2/kimi-k2", "kimi_k2/kimi-k2-thinking"} {
		out := filepath.Join(t.TempDir(), "m")
		err := run([]string{"-family", name, "-out", out,
			"-tokenizer", filepath.Join("..", "..", "testdata", "models", "qwen3", "tokenizer.json"),
			"-templates", filepath.Join("..", "..", "testdata", "render")})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	if err := run([]string{"-family", "nope/nope", "-out", t.TempDir()}); err == nil {
		t.Error("an unknown stand-in was written")
	}
}
