package server_test

import (
	"bufio"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
)

// TestClientDisconnectCancelsUpstream: a client that goes away mid-stream makes stitch cancel its
// vLLM request (freeing the sequence's KV cache), seen as the simulator finishing it "abort" long
// before its max_tokens, and no response is stored.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	m, err := render.LoadModel(os.DirFS("../testdata/models/qwen3"), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &lockedBuffer{}
	// A slow decoder (one token per 20 ms, thousands of tokens) so the generation is still running
	// when the client leaves; the test waits on events, never on the clock.
	s, err := sim.New(sim.Options{Tokenizer: m.Tokenizer(), Record: rec, DecodePerToken: 20 * time.Millisecond,
		OutputLen: 4000, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(s)
	defer simSrv.Close()
	checkpoints := store.NewMemory()
	rt, err := stack.NewModelRuntime(stack.ModelConfig{Name: "qwen3", Render: m, MaxModelLen: 32768})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Upstream: upstream.New(upstream.Options{BaseURL: simSrv.URL}), Checkpoints: checkpoints,
		Models: map[string]*server.ModelRuntime{"qwen3": rt},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/responses",
		strings.NewReader(`{"model":"qwen3","input":"Tell me a long story.","stream":true,"reasoning":{"effort":"none"}}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	var respID string
	for sc.Scan() { // read until the first text delta: generation is under way
		line := sc.Text()
		if id := gjson.Get(strings.TrimPrefix(line, "data: "), "response.id"); id.Exists() && respID == "" {
			respID = id.Str
		}
		if strings.HasPrefix(line, "event: response.output_text.delta") {
			break
		}
	}
	cancel()
	resp.Body.Close()

	// The simulator writes its record line when the request ends; wait for it with a deadline.
	deadline := time.Now().Add(30 * time.Second)
	for rec.empty() {
		if time.Now().After(deadline) {
			t.Fatal("upstream request still running 30 s after the client left")
		}
		time.Sleep(10 * time.Millisecond) // polling an external process's state, not synchronizing
	}
	line := rec.lines()[0]
	if got := gjson.Get(line, "finish_reason").Str; got != "abort" {
		t.Errorf("upstream finish_reason = %q, want abort (cancelled)", got)
	}
	if n := len(gjson.Get(line, "output_token_ids").Array()); n >= 4000 {
		t.Errorf("upstream generated %d tokens: not cancelled", n)
	}
	if _, err := checkpoints.GetResponse(context.Background(), "default", respID); err == nil {
		t.Errorf("cancelled response %s was stored", respID)
	}
}

func (l *lockedBuffer) empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len() == 0
}
