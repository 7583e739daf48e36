package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
)

// TestMetaspacePromptsExtend: a Mistral 7B v0.3-style tokenizer (Metaspace, prepend_scheme
// "first": llama2's file with the "first" variant of testdata/tokenizer/metaspace) behind
// Mistral's template. Every prompt text of testdata/render/mistral_v0 encodes to the Rust crate's
// ids, and so does every certified-suffix extension of it from another of those prompts: the
// segment after a reused boundary never gets the "▁" that offset 0 alone gets.
func TestMetaspacePromptsExtend(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "testdata")
	var variants map[string]map[string]json.RawMessage
	readJSON(t, filepath.Join(root, "tokenizer", "metaspace", "variants.json"), &variants)
	var doc map[string]json.RawMessage
	readJSON(t, filepath.Join(root, "models", "llama2", "tokenizer.json"), &doc)
	maps.Copy(doc, variants["first"])
	tokJSON, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(root, "render", "mistral_v0", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile(filepath.Join(root, "render", "mistral_v0", "vllm-tool-mistral.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(fstest.MapFS{
		"tokenizer.json":        {Data: tokJSON},
		"tokenizer_config.json": {Data: cfg},
		"chat_template.jinja":   {Data: tmpl},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	texts := readJSONLines[string](t, filepath.Join(root, "tokenizer", "metaspace", "chat.jsonl"))
	want := readJSONLines[[]uint32](t, filepath.Join(root, "tokenizer", "metaspace", "first", "chat.ids.jsonl"))
	if len(texts) != len(want) || len(texts) < 50 {
		t.Fatalf("%d texts, %d id lines", len(texts), len(want))
	}
	encs := make([]Encoding, len(texts))
	for i, text := range texts {
		encs[i] = m.EncodeWithBoundaries(text)
		if !slices.Equal(encs[i].IDs, want[i]) {
			t.Fatalf("text %d %q: ids %v, want %v", i, text, encs[i].IDs, want[i])
		}
	}
	reused := 0
	for i, next := range texts {
		for j, prev := range texts {
			got, reuse, _ := m.ExtendText(encs[j], prev, next)
			if !slices.Equal(got.IDs, want[i]) {
				t.Fatalf("ExtendText(text %d → text %d) reuse %+v: ids %v, want %v", j, i, reuse, got.IDs, want[i])
			}
			if reuse.Tokens > 0 {
				reused++
			}
		}
	}
	if reused < len(texts) {
		t.Errorf("only %d extensions reused ids; the test does not exercise the suffix", reused)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func readJSONLines[T any](t *testing.T, path string) []T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}
