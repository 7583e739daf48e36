package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		in       string
		wantOut  string
		wantCode int
		wantErr  string
	}{
		{
			name:    "encode",
			in:      "\"Hello world\"\n\"<|im_start|>user\\nhi<|im_end|>\"\n\n\"\"\n",
			wantOut: "[9707,1879]\n[151644,872,198,6023,151645]\n[]\n",
		},
		{
			name:    "no trailing newline",
			in:      `"Hello world"`,
			wantOut: "[9707,1879]\n",
		},
		{
			name:    "decode",
			args:    []string{"--decode"},
			in:      "[9707,1879]\n[151644,872,198,6023,151645]\n[]\n[27,29]\n",
			wantOut: "\"Hello world\"\n\"<|im_start|>user\\nhi<|im_end|>\"\n\"\"\n\"<>\"\n",
		},
		{
			name:     "bad line",
			in:       "\"ok\"\n[1,2]\n",
			wantOut:  "[562]\n",
			wantCode: 1,
			wantErr:  "line 2",
		},
		{
			name:     "bad decode line",
			args:     []string{"--decode"},
			in:       "[1]\n\"x\"\n",
			wantOut:  "\"\\\"\"\n",
			wantCode: 1,
			wantErr:  "line 2",
		},
		{
			name:     "missing model dir",
			args:     []string{"--model-dir", "/nonexistent"},
			in:       "\"x\"\n",
			wantCode: 1,
			wantErr:  "invalid model directory /nonexistent: stat /nonexistent: no such file",
		},
		{
			name:     "unexpected argument",
			args:     []string{"extra"},
			wantCode: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := cliEnv{stdin: strings.NewReader(tt.in), stdout: &stdout, stderr: &stderr}
			code := run(context.Background(), env, append([]string{"tokenize"}, tt.args...))
			if code != tt.wantCode {
				t.Fatalf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			if tt.wantCode != 2 && stdout.String() != tt.wantOut {
				t.Errorf("stdout = %q, want %q", stdout.String(), tt.wantOut)
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr = %q, want it to mention %q", stderr.String(), tt.wantErr)
			}
		})
	}
}

func TestTokenizeGzipModelDir(t *testing.T) {
	var stdout, stderr bytes.Buffer
	env := cliEnv{stdin: strings.NewReader("\"<|start|>user<|message|>Hello world<|end|>\"\n"), stdout: &stdout, stderr: &stderr}
	if code := run(context.Background(), env, []string{"tokenize", "--model-dir", "testdata/models/gptoss"}); code != 0 {
		t.Fatalf("exit code = %d, stderr %q", code, stderr.String())
	}
	if got, want := stdout.String(), "[200006,1428,200008,13225,2375,200007]\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
}

// TestTokenizeFamilies: stitch tokenize accepts every byte-level family's model directory; the ids
// are the Rust oracle's for these strings (tools/oracle/tokenize.js, run by hand; the full suites
// are render/bpe's golden tests).
func TestTokenizeFamilies(t *testing.T) {
	tests := []struct {
		dir, in string
		args    []string
		want    string
	}{
		{dir: "llama3_2", in: `"<|start_header_id|>user<|end_header_id|>\n\nHello world 12345<|eot_id|>"`,
			want: "[128006,882,128007,271,9906,1917,220,4513,1774,128009]\n"},
		{dir: "llama3_2", in: `"hi"`, args: []string{"--add-special-tokens"}, want: "[128000,6151]\n"},
		{dir: "llama3_1", in: `"Hello world 12345"`, want: "[9906,1917,220,4513,1774]\n"},
		{dir: "deepseek_v3", in: `"Hello world 12345 你好世界 <｜fim▁hole｜> don't"`,
			want: "[19923,2058,223,6895,1883,223,30594,3427,223,128800,2090,1664]\n"},
		{dir: "deepseek_v4", in: `"Hello world 12345 你好世界 <｜fim▁hole｜> don't"`,
			want: "[19923,2058,223,6895,1883,223,30594,3427,223,128800,2090,1664]\n"},
		{dir: "mistral_nemo", in: `"Hello world 12345"`, want: "[22177,4304,1032,1049,1050,1051,1052,1053]\n"},
		{dir: "mistral_nemo", in: `"hi"`, args: []string{"--add-special-tokens"}, want: "[1,8101]\n"},
		{dir: "qwen2_5", in: `"Hello world 12345"`, want: "[9707,1879,220,16,17,18,19,20]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.dir+strings.Join(tt.args, ""), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := cliEnv{stdin: strings.NewReader(tt.in + "\n"), stdout: &stdout, stderr: &stderr}
			args := append([]string{"tokenize", "--model-dir", "testdata/models/" + tt.dir}, tt.args...)
			if code := run(context.Background(), env, args); code != 0 {
				t.Fatalf("exit code = %d, stderr %q", code, stderr.String())
			}
			if got := stdout.String(); got != tt.want {
				t.Errorf("stdout = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTokenizeRefusesTiktoken: a Kimi K2 style directory (tiktoken.model, no tokenizer.json) gets
// an error that says why and what to do.
func TestTokenizeRefusesTiktoken(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"tiktoken.model", "tokenizer_config.json", "tokenization_kimi.py"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	env := cliEnv{stdin: strings.NewReader("\"x\"\n"), stdout: &stdout, stderr: &stderr}
	if code := run(context.Background(), env, []string{"tokenize", "--model-dir", dir}); code != 1 {
		t.Fatalf("exit code = %d, want 1", code)
	}
	for _, want := range []string{"tiktoken.model", "Kimi K2", "tokenizer.json"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr = %q, want it to mention %q", stderr.String(), want)
		}
	}
}
