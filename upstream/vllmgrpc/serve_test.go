package vllmgrpc_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/upstream"
	"github.com/stitchllm/stitch/upstream/vllmgrpc"
)

func dial(t *testing.T, opts vllmgrpc.Options) *vllmgrpc.Client {
	t.Helper()
	c, err := vllmgrpc.New(opts)
	if err != nil {
		t.Fatalf("vllmgrpc.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type tenantKey struct{}

// A salted request is refused unless AcceptSalt vouches for it; then it goes unsalted.
func TestCacheSalt(t *testing.T) {
	p := startSim(t, sim.Options{Fast: true})
	only := dial(t, vllmgrpc.Options{Target: p.target, AcceptSalt: func(ctx context.Context, _ string) error {
		if ctx.Value(tenantKey{}) != "acme" {
			return errors.New("a second tenant appeared")
		}
		return nil
	}})
	req := upstream.CompletionRequest{Model: "qwen3", Prompt: chatPrompt(t, "Hi"), MaxTokens: 3, Stream: true, ReturnTokenIDs: true, CacheSalt: "s1"}
	tests := []struct {
		name   string
		c      *vllmgrpc.Client
		tenant string
		ok     bool
	}{
		{"default refuses", p.grpc, "acme", false},
		{"vouched tenant", only, "acme", true},
		{"other tenant", only, "globex", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.WithValue(context.Background(), tenantKey{}, tt.tenant)
			body, err := tt.c.Completions(ctx, req.Parts())
			if !tt.ok {
				if !errors.Is(err, vllmgrpc.ErrCacheSaltUnsupported) {
					t.Errorf("err = %v, want ErrCacheSaltUnsupported", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Completions: %v", err)
			}
			if o := readOutcome(t, sseChunks(body)); len(o.IDs) == 0 {
				t.Errorf("no ids generated: %+v", o)
			}
		})
	}
}

// An idle engine stream fails with ErrTimeout and marks the client stalled; a probe generation
// that completes clears it.
func TestIdleTimeoutStallAndProbe(t *testing.T) {
	p := startSim(t, sim.Options{DecodePerToken: time.Hour}) // the first id at once, the next never
	c := dial(t, vllmgrpc.Options{Target: p.target, IdleTimeout: 50 * time.Millisecond})
	if c.Stalled() {
		t.Fatal("stalled before any generation")
	}
	req := upstream.CompletionRequest{Model: "qwen3", Prompt: chatPrompt(t, "Hello"), MaxTokens: 100, Stream: true, ReturnTokenIDs: true}
	body, err := c.Completions(context.Background(), req.Parts())
	if err != nil {
		t.Fatalf("Completions: %v", err)
	}
	_, err = io.ReadAll(body)
	body.Close()
	if !errors.Is(err, upstream.ErrTimeout) {
		t.Fatalf("read = %v, want ErrTimeout", err)
	}
	if !c.Stalled() {
		t.Error("not stalled after an idle timeout")
	}
	if err := c.Probe(context.Background(), "qwen3"); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if c.Stalled() {
		t.Error("still stalled after a successful probe")
	}
}

// The pass-through routes: /v1/models from GetModelInfo, the rest a 404 in OpenAI's shape.
func TestPassthroughTransport(t *testing.T) {
	p := startSim(t, sim.Options{Fast: true, MaxModelLen: 4096, ServedModelName: "qwen3"})
	hc := p.grpc.HTTPClient()
	base := p.grpc.BaseURL()
	resp, err := hc.Get(base + "/v1/models")
	if err != nil {
		t.Fatalf("GET /v1/models: %v", err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || gjson.GetBytes(data, "data.0.id").String() != "qwen3" || gjson.GetBytes(data, "data.0.max_model_len").Int() != 4096 {
		t.Errorf("models = %d %s", resp.StatusCode, data)
	}
	for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/tokenize"} {
		resp, err := hc.Post(base+path, "application/json", strings.NewReader(`{"model":"qwen3"}`))
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || gjson.GetBytes(data, "error.code").String() != "unsupported_upstream_route" ||
			!strings.Contains(gjson.GetBytes(data, "error.message").String(), "gRPC") {
			t.Errorf("POST %s = %d %s", path, resp.StatusCode, data)
		}
	}
}
