package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/sim"
)

func TestSimHelp(t *testing.T) {
	var out, errb bytes.Buffer
	err := runSim(context.Background(), cliEnv{stdout: &out, stderr: &errb}, []string{"--help"})
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("runSim --help = %v", err)
	}
	for _, f := range []string{"-listen", "-model-dir", "-served-model-name", "-max-model-len", "-block-size", "-kv-blocks",
		"-prefill-us-per-token", "-decode-us-per-token", "-fast", "-seed", "-output-len", "-drift", "-record",
		"-fail-rate", "-drop-after", "-lora-modules", "-drop-rate", "-first-byte-delay", "(default 16)", "(default 32768)"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("--help lacks %q:\n%s", f, out.String())
		}
	}
}

func TestSimBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--nope"}, {"--log-level", "loud"}, {"extra"}} {
		err := runSim(context.Background(), cliEnv{stdout: io.Discard, stderr: io.Discard}, args)
		if !errors.Is(err, errUsage) {
			t.Errorf("runSim %v = %v, want errUsage", args, err)
		}
	}
}

// TestSimServeAndShutdown loads the bundled demo model, serves it and shuts down when ctx ends.
func TestSimServeAndShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the demo model")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runSimReady(ctx, cliEnv{stdout: io.Discard, stderr: io.Discard},
			[]string{"--listen", "127.0.0.1:0", "--fast", "--served-model-name", "demo"},
			func(addr string) { addrc <- addr })
	}()
	var url string
	select {
	case addr := <-addrc:
		url = "http://" + addr
	case err := <-done:
		t.Fatalf("runSim ended early: %v", err)
	}
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"demo","prompt":[9707,1879],"max_tokens":3,"return_token_ids":true}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"prompt_token_ids":[9707,1879]`) {
		t.Errorf("completion = %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("runSim after cancel = %v", err)
	}
}

// TestSimFamilyOptions loads testdata model directories (tokenizer.json.gz, a gpt_oss
// config.json) into sim.Options and refuses parsers the tokenizer cannot write.
func TestSimFamilyOptions(t *testing.T) {
	if testing.Short() {
		t.Skip("loads tokenizers")
	}
	gptoss := t.TempDir()
	for _, f := range []string{"tokenizer.json.gz", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join("testdata/models/gptoss", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(gptoss, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(gptoss, "config.json"), []byte(`{"model_type":"gpt_oss","vocab_size":201088}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args       []string
		parser     string
		vocab      int
		newErrPart string // sim.New's error; "" when it must succeed
	}{
		{[]string{"--model-dir", "testdata/models/llama3_2", "--tool-call-parser", "pythonic"}, "pythonic", 0, ""},
		{[]string{"--model-dir", gptoss}, "openai", 201088, ""},
		{[]string{"--model-dir", "testdata/models/llama3_2", "--tool-call-parser", "kimi_k2"}, "kimi_k2", 0, "<|tool_calls_section_begin|>"},
		{[]string{"--vllm-layout", "0.11"}, "", 0, ""},
	}
	for _, tt := range tests {
		f := simFlags{maxModelLen: 4096, blockSize: 16, kvBlocks: 16, outputLen: 8, layout: "newest"}
		for i := 0; i < len(tt.args); i += 2 {
			switch tt.args[i] {
			case "--model-dir":
				f.modelDir = tt.args[i+1]
			case "--tool-call-parser":
				f.toolCallParser = tt.args[i+1]
			case "--vllm-layout":
				f.layout = tt.args[i+1]
			}
		}
		opts, closeRecord, err := f.options(slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		closeRecord()
		if opts.ToolCallParser != tt.parser || opts.VocabSize != tt.vocab {
			t.Errorf("%v: parser %q vocab %d, want %q %d", tt.args, opts.ToolCallParser, opts.VocabSize, tt.parser, tt.vocab)
		}
		_, err = sim.New(opts)
		if (tt.newErrPart == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.newErrPart)) {
			t.Errorf("%v: sim.New = %v, want error containing %q", tt.args, err, tt.newErrPart)
		}
	}
	f := simFlags{maxModelLen: 4096, blockSize: 16, kvBlocks: 16, outputLen: 8, layout: "0.9"}
	if _, _, err := f.options(slog.New(slog.DiscardHandler)); err == nil {
		t.Error("--vllm-layout 0.9 accepted")
	}
}
