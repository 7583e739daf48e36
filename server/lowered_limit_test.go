package server_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
)

// TestUpstreamLoweredMaxTokens: vLLM lowers max_tokens itself from the model's generation_config
// (max_new_tokens); the answer then ends for length before the limit stitch sent. The response
// reports the limit that applied, not the client's max_output_tokens (or null) as if that had
// ended it. A front that rewrites max_tokens to 5 stands in for vLLM's cap.
func TestUpstreamLoweredMaxTokens(t *testing.T) {
	maxTokens := regexp.MustCompile(`"max_tokens":\d+`)
	m, frontURL := simBehindFront(t, 400, func(body []byte) []byte {
		return maxTokens.ReplaceAll(body, []byte(`"max_tokens":5`))
	})
	srv, err := server.New(server.Options{
		Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Upstream: upstream.New(upstream.Options{BaseURL: frontURL}), Checkpoints: store.NewMemory(),
		Models: map[string]*server.ModelRuntime{"qwen3": mustRuntime(t, stack.ModelConfig{Name: "qwen3", Render: m, MaxModelLen: 32768})},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	tests := []struct {
		name, body string
	}{
		{"client limit 500", `{"model":"qwen3","input":"Tell me a long story.","max_output_tokens":500,"reasoning":{"effort":"none"}}`},
		{"no client limit", `{"model":"qwen3","input":"Tell me a long story.","reasoning":{"effort":"none"}}`},
		{"stream", `{"model":"qwen3","input":"Tell me a long story.","max_output_tokens":500,"stream":true,"reasoning":{"effort":"none"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(hs.URL+"/v1/responses", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			final := b
			if gjson.GetBytes([]byte(tt.body), "stream").Bool() {
				i := bytes.LastIndex(b, []byte("data: "))
				final = []byte(gjson.GetBytes(bytes.TrimSpace(b[i+6:]), "response").Raw)
			}
			r := gjson.ParseBytes(final)
			if resp.StatusCode != http.StatusOK || r.Get("status").Str != "incomplete" {
				t.Fatalf("status %d, response status %q: %s", resp.StatusCode, r.Get("status").Str, final)
			}
			if got := r.Get("max_output_tokens"); got.Int() != 5 || r.Get("usage.output_tokens").Int() != 5 {
				t.Errorf("max_output_tokens %s, output_tokens %d; want 5 and 5 (the limit vLLM applied)", got.Raw, r.Get("usage.output_tokens").Int())
			}
			if reason := r.Get("incomplete_details.reason").Str; reason != "max_output_tokens" {
				t.Errorf("incomplete_details.reason = %q", reason)
			}
		})
	}
}

// simBehindFront starts the simulator (Qwen3 demo model, outputLen tokens an answer) behind a
// reverse proxy that passes each /v1/completions body through rewrite, standing in for vLLM
// changing what stitch sent; it returns the model and the proxy's URL, both closed with t.
func simBehindFront(t *testing.T, outputLen int, rewrite func(body []byte) []byte) (*render.Renderer, string) {
	t.Helper()
	m, err := render.LoadModel(os.DirFS("../testdata/models/qwen3"), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Options{Tokenizer: m.Tokenizer(), Fast: true, OutputLen: outputLen, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)
	target, _ := url.Parse(simSrv.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			body, _ := io.ReadAll(r.Body)
			body = rewrite(body)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return m, front.URL
}
