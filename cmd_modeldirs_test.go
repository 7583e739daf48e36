package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stitchllm/stitch/configs"
)

// TestModelDirs runs `stitch tokenize` and `stitch render` over every model directory under
// testdata/models (issue 15: both accept every family's directory) and compares their output with
// the oracles' goldens: tokenize on the edge set against the Rust crate's ids (with and without
// --add-special-tokens), render (text and ids, the tokenizer loaded from the directory) against
// Jinja2 + the Rust crate for the template testdata/render/families.json pairs with the
// directory's tokenizer — the directory's own chat template where it has one, else the
// manifest's --chat-template file.
func TestModelDirs(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("testdata", "models"))
	if err != nil {
		t.Fatal(err)
	}
	families := readFamilyManifest(t)
	edgeIn := readFile(t, "testdata", "tokenizer", "edge.jsonl")
	dirs := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dirs++
		name := e.Name()
		dir := filepath.Join("testdata", "models", name)
		golden := filepath.Join("testdata", "tokenizer", name)
		t.Run(name+"/tokenize", func(t *testing.T) {
			out := runCLI(t, edgeIn, "tokenize", "--model-dir", dir)
			compareIDLines(t, out, readFile(t, golden, "edge.ids.jsonl"))
		})
		t.Run(name+"/tokenize-special", func(t *testing.T) {
			in, want := edgeIn, ""
			if _, err := os.Stat(filepath.Join(golden, "edge.special.ids.jsonl")); err == nil {
				want = readFile(t, golden, "edge.special.ids.jsonl")
			} else {
				// The SentencePiece-style models: the first 200 lines of spm.jsonl.
				lines := strings.SplitAfter(readGzip(t, filepath.Join("testdata", "tokenizer", "spm.jsonl.gz")), "\n")
				in, want = strings.Join(lines[:200], ""), readFile(t, golden, "special.ids.jsonl")
			}
			out := runCLI(t, in, "tokenize", "--add-special-tokens", "--model-dir", dir)
			compareIDLines(t, out, want)
		})
		t.Run(name+"/render", func(t *testing.T) {
			f, ok := familyFor(families, name)
			if !ok {
				t.Fatalf("testdata/render/families.json has no template for tokenizer %s", name)
			}
			args := []string{"render", "--model-dir", dir}
			if f.File != "" {
				args = append(args, "--chat-template", filepath.Join("testdata", "render", f.Family, f.File))
			}
			in, want := renderGoldens(t, f.Family, f.Template)
			out := runCLI(t, in.String(), args...)
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(got) != len(want) || len(want) < 40 {
				t.Fatalf("%d output lines for %d cases", len(got), len(want))
			}
			var datedIn strings.Builder
			var dated [][]uint32
			for i, line := range got {
				var g struct {
					Text   string   `json:"text"`
					Tokens []uint32 `json:"tokens"`
				}
				if err := json.Unmarshal([]byte(line), &g); err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				w := want[i]
				if w.dated {
					// strftime_now reads the clock here: the oracle's fixed date is today's, and the
					// ids are checked against stitch tokenize of the text below (the render package's
					// test compares these cases' ids with the oracle's at the fixed date).
					today := time.Now()
					w.text = strings.NewReplacer("02 Jan 2026", today.Format("02 Jan 2006"), "2026-01-02", today.Format("2006-01-02")).Replace(w.text)
					b, _ := json.Marshal(g.Text)
					datedIn.Write(append(b, '\n'))
					dated = append(dated, g.Tokens)
					w.ids = g.Tokens
				}
				if g.Text != w.text || !slices.Equal(g.Tokens, w.ids) {
					t.Errorf("%s (%s/%s): output differs from the oracles: text %q (want %q), %d tokens (want %d)",
						w.name, f.Family, f.Template, g.Text, w.text, len(g.Tokens), len(w.ids))
				}
			}
			if len(dated) > 0 {
				var ids strings.Builder
				for _, d := range dated {
					b, _ := json.Marshal(d)
					ids.Write(append(b, '\n'))
				}
				compareIDLines(t, runCLI(t, datedIn.String(), "tokenize", "--model-dir", dir), ids.String())
			}
			t.Logf("%s/%s: %d renders, text and ids equal (%d with today's date)", f.Family, f.Template, len(got), len(dated))
		})
	}
	if dirs < 10 {
		t.Errorf("only %d model directories", dirs)
	}
}

type familyEntry struct{ Family, Template, File, Tokenizer string }

func readFamilyManifest(t *testing.T) []familyEntry {
	t.Helper()
	var fams []familyEntry
	if err := json.Unmarshal([]byte(readFile(t, "testdata", "render", "families.json")), &fams); err != nil {
		t.Fatal(err)
	}
	return fams
}

// familyFor picks the manifest entry for a tokenizer: the one rendered with the folder's own
// template first (the model directory's tokenizer_config.json template is that one).
func familyFor(fams []familyEntry, tokenizer string) (familyEntry, bool) {
	var pick familyEntry
	found := false
	for _, f := range fams {
		if f.Tokenizer != tokenizer {
			continue
		}
		if !found || (pick.File != "" && f.File == "") {
			pick, found = f, true
		}
	}
	return pick, found
}

type renderGolden struct {
	name, text string
	ids        []uint32
	dated      bool // the text shows the oracle's fixed date (strftime_now)
}

// renderGoldens returns the family cases that rendered in Jinja2 (as stdin for stitch render) with
// their texts and ids; dated marks the texts that show the oracle's fixed date (strftime_now).
func renderGoldens(t *testing.T, family, template string) (strings.Builder, []renderGolden) {
	t.Helper()
	cases := strings.Split(strings.TrimSuffix(readFile(t, "testdata", "render", "family_cases.jsonl"), "\n"), "\n")
	base := filepath.Join("testdata", "render", family)
	texts := strings.Split(strings.TrimSuffix(readFile(t, base, template+".text.jsonl"), "\n"), "\n")
	ids := map[string][]uint32{}
	for _, line := range strings.Split(strings.TrimSuffix(readFile(t, base, template+".ids.jsonl"), "\n"), "\n") {
		var g struct {
			Name string
			IDs  []uint32
		}
		if err := json.Unmarshal([]byte(line), &g); err != nil {
			t.Fatal(err)
		}
		ids[g.Name] = g.IDs
	}
	var in strings.Builder
	var want []renderGolden
	for i, line := range texts {
		var g struct {
			Name string
			Text *string
		}
		if err := json.Unmarshal([]byte(line), &g); err != nil {
			t.Fatal(err)
		}
		if g.Text == nil {
			continue
		}
		id, ok := ids[g.Name]
		if !ok {
			t.Fatalf("%s/%s: no ids for %s", family, template, g.Name)
		}
		in.WriteString(cases[i] + "\n")
		dated := strings.Contains(*g.Text, "02 Jan 2026") || strings.Contains(*g.Text, "2026-01-02")
		want = append(want, renderGolden{g.Name, *g.Text, id, dated})
	}
	return in, want
}

func runCLI(t *testing.T, in string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := cliEnv{stdin: strings.NewReader(in), stdout: &stdout, stderr: &stderr}
	if code := run(context.Background(), env, args); code != 0 {
		t.Fatalf("stitch %s: exit %d, stderr: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

// compareIDLines compares JSON id arrays line by line.
func compareIDLines(t *testing.T, got, want string) {
	t.Helper()
	g := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	w := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	if len(g) != len(w) {
		t.Fatalf("%d output lines, %d reference lines", len(g), len(w))
	}
	bad := 0
	for i := range g {
		var a, b []uint32
		if err := json.Unmarshal([]byte(g[i]), &a); err != nil {
			t.Fatalf("output line %d: %v", i+1, err)
		}
		if err := json.Unmarshal([]byte(w[i]), &b); err != nil {
			t.Fatalf("reference line %d: %v", i+1, err)
		}
		if !slices.Equal(a, b) {
			if bad++; bad <= 5 {
				t.Errorf("line %d: %v, the Rust oracle %v", i+1, a, b)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d lines differ", bad, len(g))
	}
}

func readGzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRenderRefusesTiktoken: `stitch render` (with ids) on a Kimi K2 style directory says why it
// cannot tokenize; --text-only still renders its template.
func TestRenderRefusesTiktoken(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"tiktoken.model":        "x",
		"tokenization_kimi.py":  "x",
		"tokenizer_config.json": `{"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := `{"messages": [{"role": "user", "content": "hi"}]}` + "\n"
	var stdout, stderr bytes.Buffer
	env := cliEnv{stdin: strings.NewReader(in), stdout: &stdout, stderr: &stderr}
	if code := run(context.Background(), env, []string{"render", "--model-dir", dir}); code != 1 {
		t.Fatalf("exit code = %d, want 1", code)
	}
	for _, want := range []string{"tiktoken.model", "Kimi K2", "tokenizer.json"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr = %q, want it to mention %q", stderr.String(), want)
		}
	}
	if got := runCLI(t, in, "render", "--text-only", "--model-dir", dir); got != "{\"text\":\"hi\"}\n" {
		t.Errorf("--text-only: %q", got)
	}
}

// TestModelDirCommandsAgree: a directory one command accepts, the others that need the same files
// accept too, and a refusal reads the same whichever command refuses (issue 33: a gpt-oss
// directory of tokenizer.json and config.json rendered with `render --responses` but `serve`
// refused it for a missing tokenizer_config.json). serve is checked through the loaders it calls
// (profileFamily, loadProfileModel); render and tokenize through the CLI.
func TestModelDirCommandsAgree(t *testing.T) {
	write := func(t *testing.T, files map[string][]byte) string {
		dir := t.TempDir()
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	read := func(t *testing.T, parts ...string) []byte {
		b, err := os.ReadFile(filepath.Join(parts...))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cli := func(in string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), cliEnv{stdin: strings.NewReader(in), stdout: &stdout, stderr: &stderr}, args)
		return code, stdout.String(), stderr.String()
	}
	serveLoad := func(dir string) error {
		p := configs.ModelProfile{Name: "m", Dir: dir}
		names, err := profileFamily(p)
		if err != nil {
			return err
		}
		_, _, err = loadProfileModel(p, names, func(string) string { return "" })
		return err
	}

	t.Run("gpt-oss tokenizer and config only", func(t *testing.T) {
		dir := write(t, map[string][]byte{"tokenizer.json.gz": read(t, "testdata", "models", "gptoss", "tokenizer.json.gz"),
			"config.json": []byte(`{"model_type":"gpt_oss"}`)})
		if err := serveLoad(dir); err != nil {
			t.Errorf("serve refuses it: %v", err)
		}
		if code, out, stderr := cli(`{"model":"m","input":"hi"}`+"\n", "render", "--responses", "--model-dir", dir, "--start-date", "2026-01-05"); code != 0 || !strings.Contains(out, "<|start|>user<|message|>hi<|end|>") {
			t.Errorf("render --responses: exit %d, %.200s %s", code, out, stderr)
		}
	})
	t.Run("no tokenizer_config", func(t *testing.T) {
		dir := write(t, map[string][]byte{"tokenizer.json": read(t, "testdata", "models", "qwen3", "tokenizer.json")})
		serveErr := serveLoad(dir)
		code, _, stderr := cli("", "render", "--model-dir", dir)
		if serveErr == nil || code != 1 || strings.TrimSpace(stderr) != "stitch render: "+serveErr.Error() ||
			!strings.Contains(stderr, "invalid model directory "+dir+": read tokenizer_config.json") {
			t.Errorf("serve: %v\nrender: exit %d %q\nwant both \"invalid model directory %s: read tokenizer_config.json: …\"", serveErr, code, stderr, dir)
		}
		if code, _, stderr := cli(`"x"`+"\n", "tokenize", "--model-dir", dir); code != 0 {
			t.Errorf("tokenize needs only tokenizer.json: exit %d %s", code, stderr)
		}
	})
	t.Run("tiktoken", func(t *testing.T) {
		dir := write(t, map[string][]byte{"tiktoken.model": []byte("x"), "tokenizer_config.json": read(t, "testdata", "models", "qwen3", "tokenizer_config.json")})
		serveErr := serveLoad(dir)
		_, _, renderErr := cli("", "render", "--model-dir", dir)
		_, _, tokErr := cli(`"x"`+"\n", "tokenize", "--model-dir", dir)
		for what, msg := range map[string]string{"serve": fmt.Sprint(serveErr), "render": renderErr, "tokenize": tokErr} {
			if !strings.Contains(msg, "invalid model directory "+dir+": read tokenizer.json: ") || !strings.Contains(msg, "tiktoken.model") {
				t.Errorf("%s: %q, want the tiktoken refusal naming %s", what, msg, dir)
			}
		}
	})
}
