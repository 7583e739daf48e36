package main

import (
	"bytes"
	"context"
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
			wantErr:  "tokenizer.json",
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
