package server_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
)

// TestPromptEchoMismatch: the first chunk echoes the prompt the model server ran; when that is
// not the prompt stitch sent (a front adds an id to the request here, as a proxy or a vLLM
// change between them could), the generation still succeeds with the echo counted, and the
// mismatch is visible: stitch_prompt_echo_mismatch_total and one warning per generation. The
// same server with the prompt untouched counts nothing.
func TestPromptEchoMismatch(t *testing.T) {
	var alter sync.Mutex
	altered := false
	m, frontURL := simBehindFront(t, 20, func(body []byte) []byte {
		alter.Lock()
		defer alter.Unlock()
		if !altered {
			return body
		}
		return bytes.Replace(body, []byte(`"prompt":[`), []byte(`"prompt":[198,`), 1)
	})
	var logs lockedBuffer
	reg := prometheus.NewRegistry()
	srv, err := server.New(server.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})), Registry: reg,
		Upstream: upstream.New(upstream.Options{BaseURL: frontURL}), Checkpoints: store.NewMemory(),
		Models: map[string]*server.ModelRuntime{"qwen3": mustRuntime(t, stack.ModelConfig{Name: "qwen3", Render: m, MaxModelLen: 32768})},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	turn := func(body string) gjson.Result {
		t.Helper()
		resp, err := http.Post(hs.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		final := b
		if gjson.GetBytes([]byte(body), "stream").Bool() {
			i := bytes.LastIndex(b, []byte("data: "))
			final = []byte(gjson.GetBytes(bytes.TrimSpace(b[i+6:]), "response").Raw)
		}
		r := gjson.ParseBytes(final)
		if resp.StatusCode != http.StatusOK || r.Get("status").Str != "completed" {
			t.Fatalf("status %d, response status %q: %s", resp.StatusCode, r.Get("status").Str, b)
		}
		return r
	}
	const first = `{"model":"qwen3","input":"Say something.","max_output_tokens":50,"reasoning":{"effort":"none"},"stream":true}`
	sent := turn(first).Get("usage.input_tokens").Int()
	if n := gatherCounter(t, reg, "stitch_prompt_echo_mismatch_total"); n != 0 || logs.String() != "" {
		t.Fatalf("the prompt as sent: mismatch counter %v, logs %q", n, logs.String())
	}

	alter.Lock()
	altered = true
	alter.Unlock()
	for i, body := range []string{first, strings.Replace(first, `"stream":true`, `"stream":false`, 1)} {
		r := turn(body)
		if got := r.Get("usage.input_tokens").Int(); got != sent+1 {
			t.Errorf("turn %d: input_tokens %d, want %d (the prompt the model server ran)", i, got, sent+1)
		}
		if n := gatherCounter(t, reg, "stitch_prompt_echo_mismatch_total"); n != float64(i+1) {
			t.Errorf("turn %d: mismatch counter %v, want %d", i, n, i+1)
		}
	}
	if n := strings.Count(logs.String(), "echoed a prompt other than the one sent"); n != 2 {
		t.Errorf("%d warnings, want one per generation: %s", n, logs.String())
	}
}
