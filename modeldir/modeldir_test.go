package modeldir_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/modeldir"
	"github.com/stitchllm/stitch/render"
)

// copyFiles makes a model directory of the given files from testdata/models/<from>.
func copyFiles(t *testing.T, from string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		var data []byte
		if strings.HasPrefix(src, "{") {
			data = []byte(src)
		} else {
			var err error
			if data, err = os.ReadFile(filepath.Join("..", "testdata", "models", from, src)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDirShapes: each directory shape is accepted or refused the same way whatever loads it, and
// a refusal is "invalid model directory DIR: …" naming the file.
func TestDirShapes(t *testing.T) {
	gptossConfig := `{"model_type":"gpt_oss","vocab_size":201088}`
	tests := []struct {
		name       string
		from       string
		files      map[string]string
		renderErr  string // "" accepted
		harmonyErr string
		tokErr     string
		harmony    bool
	}{
		{name: "gz tokenizer", from: "llama3_2", files: map[string]string{"tokenizer.json.gz": "tokenizer.json.gz", "tokenizer_config.json": "tokenizer_config.json"},
			harmonyErr: "lacks the o200k_harmony special tokens"},
		{name: "gpt-oss tokenizer and config only", from: "gptoss", files: map[string]string{"tokenizer.json.gz": "tokenizer.json.gz", "config.json": gptossConfig},
			renderErr: "read tokenizer_config.json", harmony: true},
		{name: "no tokenizer_config", from: "llama3_2", files: map[string]string{"tokenizer.json.gz": "tokenizer.json.gz"},
			renderErr: "read tokenizer_config.json", harmonyErr: "lacks the o200k_harmony special tokens"},
		{name: "tiktoken only", from: "qwen3", files: map[string]string{"tiktoken.model": "tokenizer_config.json", "tokenizer_config.json": "tokenizer_config.json"},
			renderErr: "tiktoken.model", harmonyErr: "tiktoken.model", tokErr: "tiktoken.model"},
		{name: "empty", files: map[string]string{},
			renderErr: "read tokenizer_config.json", harmonyErr: "read tokenizer.json", tokErr: "read tokenizer.json"},
		{name: "bad gzip", files: map[string]string{"tokenizer.json.gz": `{"not":"gzip"}`},
			renderErr: "read tokenizer_config.json", harmonyErr: "tokenizer.json.gz", tokErr: "tokenizer.json.gz"},
	}
	check := func(t *testing.T, what, dir string, err error, want string) {
		t.Helper()
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", what, err)
		case want != "" && err == nil:
			t.Errorf("%s: accepted, want an error naming %q", what, want)
		case want != "":
			if !errors.Is(err, render.ErrModelDir) || !strings.HasPrefix(err.Error(), "invalid model directory "+dir+": ") || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q, want \"invalid model directory %s: …%s…\"", what, err, dir, want)
			}
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyFiles(t, tt.from, tt.files)
			d, err := modeldir.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.Renderer(render.Options{})
			check(t, "Renderer", dir, err, tt.renderErr)
			_, _, err = d.HarmonyRenderer()
			check(t, "HarmonyRenderer", dir, err, tt.harmonyErr)
			_, err = d.Tokenizer()
			check(t, "Tokenizer", dir, err, tt.tokErr)
			cfg, err := d.Config()
			if err != nil || cfg.Harmony != tt.harmony {
				t.Errorf("Config = %+v, %v; want Harmony %v", cfg, err, tt.harmony)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	if _, err := modeldir.Open(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, render.ErrModelDir) {
		t.Errorf("missing directory: %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := modeldir.Open(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
	d, err := modeldir.Open("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Renderer(render.Options{}); err != nil {
		t.Errorf("the bundled demo model: %v", err)
	}
}

func TestConfigVocab(t *testing.T) {
	for _, tt := range []struct {
		config string
		vocab  int
		err    bool
	}{
		{`{"vocab_size":151936}`, 151936, false},
		{`{"text_config":{"vocab_size":262208}}`, 262208, false},
		{`{"vocab_size":`, 0, true},
	} {
		d := modeldir.FromFS(mapFS{"config.json": tt.config}, "m")
		cfg, err := d.Config()
		if (err != nil) != tt.err || cfg.VocabSize != tt.vocab {
			t.Errorf("%s: %+v, %v", tt.config, cfg, err)
		}
	}
}

type mapFS map[string]string

func (m mapFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (m mapFS) ReadFile(name string) ([]byte, error) {
	if s, ok := m[name]; ok {
		return []byte(s), nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}
