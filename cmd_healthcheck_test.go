package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stitchllm/stitch/configs"
)

func TestProbeURL(t *testing.T) {
	for _, tt := range []struct{ listen, want string }{
		{"", "http://127.0.0.1:8080/readyz"},
		{":8080", "http://127.0.0.1:8080/readyz"},
		{"0.0.0.0:9000", "http://127.0.0.1:9000/readyz"},
		{"[::]:9000", "http://127.0.0.1:9000/readyz"},
		{"127.0.0.2:9000", "http://127.0.0.2:9000/readyz"},
		{"[::1]:9000", "http://[::1]:9000/readyz"},
		{"localhost:9000", "http://localhost:9000/readyz"},
	} {
		if got := probeURL(tt.listen); got != tt.want {
			t.Errorf("probeURL(%q) = %q, want %q", tt.listen, got, tt.want)
		}
	}
}

// TestHealthcheck probes a real `stitch serve` (built-in simulator) the way the image's
// HEALTHCHECK does: the address from STITCH_LISTEN, then an explicit --url, then a stopped server.
func TestHealthcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the demo model")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- runServeReady(ctx, cliEnv{stdout: io.Discard, stderr: io.Discard},
			[]string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--sim-fast", "--log-level", "error"},
			func(addr string) { addrc <- addr })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve ended early: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start")
	}
	getenv := func(k string) string {
		if k == configs.EnvName("listen") {
			return addr
		}
		return ""
	}
	probe := func(args ...string) error {
		var stderr strings.Builder
		return healthcheck(t.Context(), cliEnv{stdout: io.Discard, stderr: &stderr}, args, getenv)
	}
	if err := probe(); err != nil {
		t.Errorf("healthcheck of a ready serve at %s: %v", addr, err)
	}
	if err := probe("--url", "http://"+addr+"/healthz"); err != nil {
		t.Errorf("healthcheck --url /healthz: %v", err)
	}
	if err := probe("--url", "http://"+addr+"/no-such-path"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("healthcheck of a 404 = %v, want an error naming the status", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve after cancel: %v", err)
	}
	if err := probe(); err == nil {
		t.Error("healthcheck of a stopped serve succeeded")
	}
}
