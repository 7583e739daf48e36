package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stitchllm/stitch/render"
)

func TestRenderCommand(t *testing.T) {
	in := `{"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"enable_thinking":false}}` + "\n" +
		`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"x":0.0}}}]}],"add_generation_prompt":false}` + "\n"
	var stdout, stderr bytes.Buffer
	env := cliEnv{stdin: strings.NewReader(in), stdout: &stdout, stderr: &stderr}
	// The model directory with the revised Qwen3 template from a file. (The embedded demo model,
	// the default, is left out: inflating it under -race takes ~10 s.)
	dir := filepath.Join("testdata", "models", "qwen3")
	tmpl := filepath.Join("testdata", "render", "templates", "qwen3-8b.jinja")
	if code := run(context.Background(), env, []string{"render", "--model-dir", dir, "--chat-template", tmpl}); code != 0 {
		t.Fatalf("stitch render exit %d, stderr: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d output lines, want 2:\n%s", len(lines), stdout.String())
	}
	var first struct {
		Text   string
		Tokens []uint32
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
	if first.Text != want {
		t.Errorf("text = %q, want %q", first.Text, want)
	}
	if len(first.Tokens) == 0 || first.Tokens[0] != 151644 {
		t.Errorf("tokens = %v, want a prompt starting with <|im_start|> (151644)", first.Tokens)
	}
	var second struct{ Text string }
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(second.Text, `"arguments": {"x": 0.0}`) {
		t.Errorf("second text lost the 0.0 spelling: %q", second.Text)
	}
}

var (
	renderModelOnce sync.Once
	renderModel     *render.Renderer
	renderModelErr  error
)

// qwen3Model loads testdata/models/qwen3 once for the tests that call renderLines directly.
func qwen3Model(t *testing.T) *render.Renderer {
	t.Helper()
	renderModelOnce.Do(func() {
		renderModel, renderModelErr = render.LoadModel(os.DirFS(filepath.Join("testdata", "models", "qwen3")), render.Options{})
	})
	if renderModelErr != nil {
		t.Fatal(renderModelErr)
	}
	return renderModel
}

func TestRenderCommandErrors(t *testing.T) {
	// Through the CLI: a model directory that cannot be loaded exits 1 before reading stdin.
	var stdout, stderr bytes.Buffer
	env := cliEnv{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
	if code := run(context.Background(), env, []string{"render", "--model-dir", t.TempDir()}); code != 1 ||
		!strings.Contains(stderr.String(), "stitch render: invalid model directory") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	m := qwen3Model(t)
	for _, tt := range []struct{ name, in, want string }{
		{"bad part", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, "line 1: not supported: messages[0].content[0].type"},
		{"bad json", `{"messages":[{"role":"user","content":"hi"}]}` + "\n\n" + `{"messages":` + "\n", "line 3: invalid input"},
		{"bad kwargs", `{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"messages":1}}`, "line 1: invalid input: chat_template_kwargs.messages"},
		{"template error", `{"messages":[]}`, "line 1: apply chat template"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := renderLines(context.Background(), modelRenderer(m), strings.NewReader(tt.in), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("renderLines error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestRenderCommandGolden feeds the golden chat cases through the command's line loop and
// compares with the Python Jinja2 oracle's texts.
func TestRenderCommandGolden(t *testing.T) {
	m := qwen3Model(t)
	cases, err := os.ReadFile(filepath.Join("testdata", "render", "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "render", "qwen3.text.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := renderLines(context.Background(), modelRenderer(m), bytes.NewReader(cases), &out); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	if len(got) != len(wantLines) {
		t.Fatalf("%d output lines, want %d", len(got), len(wantLines))
	}
	for i := range got {
		var g struct{ Text string }
		var w struct{ Name, Text string }
		if err := json.Unmarshal([]byte(got[i]), &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(wantLines[i]), &w); err != nil {
			t.Fatal(err)
		}
		if g.Text != w.Text {
			t.Errorf("line %d (%s): text differs from the oracle", i+1, w.Name)
		}
	}
}

// TestRenderCommandFamilies: `stitch render --text-only --model-dir` loads every family's folder
// of testdata/render (with --chat-template for the extra templates) and reproduces the oracle's
// texts for the family cases the template accepts.
func TestRenderCommandFamilies(t *testing.T) {
	manifest, err := os.ReadFile(filepath.Join("testdata", "render", "families.json"))
	if err != nil {
		t.Fatal(err)
	}
	var families []struct{ Family, Template, File string }
	if err := json.Unmarshal(manifest, &families); err != nil {
		t.Fatal(err)
	}
	cases := strings.Split(strings.TrimSuffix(readFile(t, "testdata", "render", "family_cases.jsonl"), "\n"), "\n")
	for _, f := range families {
		t.Run(f.Family+"/"+f.Template, func(t *testing.T) {
			dir := filepath.Join("testdata", "render", f.Family)
			golden := strings.Split(strings.TrimSuffix(readFile(t, dir, f.Template+".text.jsonl"), "\n"), "\n")
			var in strings.Builder
			var want []string
			for i, line := range golden {
				var g struct{ Text *string }
				if err := json.Unmarshal([]byte(line), &g); err != nil {
					t.Fatal(err)
				}
				if g.Text != nil {
					in.WriteString(cases[i] + "\n")
					want = append(want, *g.Text)
				}
			}
			args := []string{"render", "--text-only", "--model-dir", dir}
			if f.File != "" {
				args = append(args, "--chat-template", filepath.Join(dir, f.File))
			}
			var stdout, stderr bytes.Buffer
			env := cliEnv{stdin: strings.NewReader(in.String()), stdout: &stdout, stderr: &stderr}
			if code := run(context.Background(), env, args); code != 0 {
				t.Fatalf("exit %d, stderr: %s", code, stderr.String())
			}
			got := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			if len(want) == 0 || len(got) != len(want) {
				t.Fatalf("%d output lines for %d cases", len(got), len(want))
			}
			for i := range got {
				var g map[string]any
				if err := json.Unmarshal([]byte(got[i]), &g); err != nil {
					t.Fatal(err)
				}
				// strftime_now reads the clock here: texts showing the oracle's fixed date
				// (Llama 3.x, gpt-oss, Mistral Small) are compared by the render package's test.
				if strings.Contains(want[i], "2026") {
					want[i] = fmt.Sprint(g["text"])
				}
				if _, ok := g["tokens"]; ok || g["text"] != want[i] {
					t.Errorf("line %d: %q, want {\"text\": %q}", i+1, got[i], want[i])
				}
			}
		})
	}
}

// TestRenderCommandTemplateChoice: chat_template.jinja wins over tokenizer_config.json's
// chat_template (as in transformers), and --chat-template over both.
func TestRenderCommandTemplateChoice(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tokenizer_config.json", `{"chat_template": "config:{{ messages[0].content }}"}`)
	override := filepath.Join(t.TempDir(), "override.jinja")
	if err := os.WriteFile(override, []byte("flag:{{ messages[0].content }}"), 0o644); err != nil {
		t.Fatal(err)
	}
	render := func(extra ...string) string {
		var stdout, stderr bytes.Buffer
		env := cliEnv{stdin: strings.NewReader(`{"messages":[{"role":"user","content":"x"}]}` + "\n"), stdout: &stdout, stderr: &stderr}
		if code := run(context.Background(), env, append([]string{"render", "--text-only", "--model-dir", dir}, extra...)); code != 0 {
			t.Fatalf("exit %d, stderr: %s", code, stderr.String())
		}
		return strings.TrimSpace(stdout.String())
	}
	if got := render(); got != `{"text":"config:x"}` {
		t.Errorf("tokenizer_config.json only: %s", got)
	}
	write("chat_template.jinja", "file:{{ messages[0].content }}")
	if got := render(); got != `{"text":"file:x"}` {
		t.Errorf("with chat_template.jinja: %s", got)
	}
	if got := render("--chat-template", override); got != `{"text":"flag:x"}` {
		t.Errorf("with --chat-template: %s", got)
	}
	// The content format: forced to openai, the content is a list of parts.
	write("chat_template.jinja", "{{ messages[0].content }}")
	if got := render("--content-format", "openai"); got != `{"text":"[{'type': 'text', 'text': 'x'}]"}` {
		t.Errorf("--content-format openai: %s", got)
	}
	var stderr bytes.Buffer
	env := cliEnv{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr}
	if code := run(context.Background(), env, []string{"render", "--text-only", "--model-dir", dir, "--content-format", "xml"}); code == 0 ||
		!strings.Contains(stderr.String(), "--content-format") {
		t.Errorf("bad --content-format: exit %d, stderr %q", code, stderr.String())
	}
}

func readFile(t *testing.T, parts ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
