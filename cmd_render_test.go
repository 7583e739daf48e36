package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRenderCommand(t *testing.T) {
	in := `{"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"enable_thinking":false}}` + "\n" +
		`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"x":0.0}}}]}],"add_generation_prompt":false}` + "\n"
	var stdout, stderr bytes.Buffer
	env := cliEnv{stdin: strings.NewReader(in), stdout: &stdout, stderr: &stderr}
	dir := filepath.Join("testdata", "models", "qwen3")
	if code := run(context.Background(), env, []string{"render", "--model-dir", dir}); code != 0 {
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

func TestRenderCommandErrors(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"bad json", `{"messages":[{"role":"user","content":"hi"}]}` + "\n" + `{"messages":` + "\n", "line 2"},
		{"bad part", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, "line 1: not supported: messages[0].content[0].type"},
		{"bad kwargs", `{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"messages":1}}`, "line 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := cliEnv{stdin: strings.NewReader(tt.in), stdout: &stdout, stderr: &stderr}
			code := run(context.Background(), env, []string{"render"}) // embedded demo model
			if code != 1 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 1 mentioning %q", code, stderr.String(), tt.want)
			}
		})
	}
}

func TestRenderCommandTemplateFile(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "t.jinja")
	if err := os.WriteFile(tmpl, []byte("{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	env := cliEnv{stdin: strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`), stdout: &stdout, stderr: &stderr}
	if code := run(context.Background(), env, []string{"render", "--chat-template", tmpl}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), `{"text":"[user]hi","tokens":[`) {
		t.Errorf("output = %s", stdout.String())
	}
}
