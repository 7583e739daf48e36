package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
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
