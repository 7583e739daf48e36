package server_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
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

// countingCheckpoints counts the GetItems calls that read more than one item (a conversation's
// load; an item reference reads one).
type countingCheckpoints struct {
	store.Checkpoints
	loads atomic.Int64
}

func (c *countingCheckpoints) GetItems(ctx context.Context, tenant string, ids []string) ([]store.Item, error) {
	if len(ids) > 1 {
		c.loads.Add(1)
	}
	return c.Checkpoints.GetItems(ctx, tenant, ids)
}

// TestHeldHistory checks a continuation of a response whose hot entry holds its conversation:
// the earlier items are not read back from the store, the tool-call pairing is judged from the
// kept state as from the items (the same 400s), and a checkpoint that lists other ids than the
// held ones (an item stored under a derived id) is read from the store.
func TestHeldHistory(t *testing.T) {
	m, err := render.LoadModel(os.DirFS("../testdata/models/qwen3"), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	s, err := sim.New(sim.Options{Tokenizer: m.Tokenizer(), Fast: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)
	checkpoints := &countingCheckpoints{Checkpoints: store.NewMemory()}
	sealer, err := store.NewSealer([]store.SealKey{{ID: "k1", Secret: bytes.Repeat([]byte{7}, 32)}}, store.SealerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	arts, err := stack.NewArtifacts(stack.ArtifactsConfig{Sealer: sealer, CacheMB: 16, HotMB: 64,
		AuditRate: 1, SyncAudit: true, Checkpoints: checkpoints, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arts.Close() })
	rt, err := stack.NewModelRuntime(stack.ModelConfig{Name: "qwen3", Render: m, MaxModelLen: 32768, Artifacts: arts})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Logger: logger, Registry: prometheus.NewRegistry(), Upstream: upstream.New(upstream.Options{BaseURL: simSrv.URL}),
		Models: map[string]*server.ModelRuntime{"qwen3": rt}, Checkpoints: checkpoints, Now: time.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	post := func(body string) (int, gjson.Result) {
		t.Helper()
		resp, err := http.Post(hs.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, gjson.ParseBytes(data)
	}
	ok := func(body string) gjson.Result {
		t.Helper()
		code, r := post(body)
		if code != 200 {
			t.Fatalf("POST %s = %d %s", body, code, r.Raw)
		}
		return r
	}
	tools := `[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`

	r1 := ok(`{"model":"qwen3","input":[{"type":"message","role":"user","id":"msg_u1","content":"What is the weather in Paris?"}],"tools":` + tools + `}`)
	call := r1.Get(`output.#(type=="function_call")`)
	if !call.Exists() {
		t.Fatalf("turn 1: no function call in %s", r1.Raw)
	}
	callID := call.Get("call_id").Str

	// The stored chain's call, unanswered, and an output answering no call: refused as before.
	before := checkpoints.loads.Load()
	code, e := post(`{"model":"qwen3","previous_response_id":"` + r1.Get("id").Str + `","input":"Thanks!","tools":` + tools + `}`)
	if code != 400 || e.Get("error.param").Str != "input" || !strings.Contains(e.Get("error.message").Str, callID) {
		t.Errorf("unanswered stored call: %d %s", code, e.Raw)
	}
	code, e = post(`{"model":"qwen3","previous_response_id":"` + r1.Get("id").Str + `","input":[{"type":"function_call_output","call_id":"call_nope","output":"x"}],"tools":` + tools + `}`)
	if code != 400 || e.Get("error.param").Str != "input[0].call_id" {
		t.Errorf("output of no call: %d %s", code, e.Raw)
	}
	r2 := ok(`{"model":"qwen3","previous_response_id":"` + r1.Get("id").Str + `","input":[{"type":"function_call_output","call_id":"` + callID + `","output":"21 C"}],"tools":` + tools + `}`)
	if n := checkpoints.loads.Load() - before; n != 0 {
		t.Errorf("continuations of a held conversation read it from the store %d times, want 0", n)
	}

	// An input that reuses the stored id msg_u1 with other bytes: the store keeps them under a
	// derived id, so r3's checkpoint names other ids than its held conversation.
	r3 := ok(`{"model":"qwen3","previous_response_id":"` + r2.Get("id").Str + `","input":[{"type":"message","role":"user","id":"msg_u1","content":"And in Rome?"}],"tools":` + tools + `}`)
	before = checkpoints.loads.Load()
	input := `"Thanks!"`
	if c := r3.Get(`output.#(type=="function_call")`); c.Exists() {
		input = `[{"type":"function_call_output","call_id":"` + c.Get("call_id").Str + `","output":"18 C"}]`
	}
	ok(`{"model":"qwen3","previous_response_id":"` + r3.Get("id").Str + `","input":` + input + `,"tools":` + tools + `}`)
	if n := checkpoints.loads.Load() - before; n != 1 {
		t.Errorf("continuation of a checkpoint with a derived id read its conversation %d times, want 1", n)
	}
}
