package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
)

// TestUpstreamMetricsPassThrough: the model server's vllm:* series are served on the configured
// path of stitch's port, unauthenticated like /metrics, and stitch's own /metrics stays its own.
func TestUpstreamMetricsPassThrough(t *testing.T) {
	m := loadQwen3(t)
	s, err := sim.New(sim.Options{Tokenizer: m.Tokenizer(), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)
	srv, err := server.New(server.Options{
		Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Upstream: upstream.New(upstream.Options{BaseURL: simSrv.URL}),
		Models:      map[string]*server.ModelRuntime{"qwen3": mustRuntime(t, stack.ModelConfig{Name: "qwen3", Render: m, MaxModelLen: 32768})},
		Checkpoints: store.NewMemory(), Now: time.Now, Auth: keyAuth{"key-a": "acme"}, UpstreamMetricsPath: "/vllm/metrics",
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	get := func(path string) (int, string) {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/vllm/metrics")
	if code != 200 || !strings.Contains(body, "vllm:") {
		t.Fatalf("GET /vllm/metrics = %d, vllm series %v", code, strings.Contains(body, "vllm:"))
	}
	if _, own := get("/metrics"); strings.Contains(own, "vllm:") {
		t.Errorf("stitch's /metrics carries vllm:* series")
	}
}
