package server_test

import (
	"bytes"
	"context"
	"fmt"
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
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
)

// corruptible is a memory store whose chosen items read as corrupt (store.ErrCorrupt wraps
// store.ErrNotFound, as the real stores' errors do).
type corruptible struct {
	*store.Memory
	mu  sync.Mutex
	bad map[string]bool
}

func (c *corruptible) GetItems(ctx context.Context, tenant string, ids []string) ([]store.Item, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if c.bad[id] {
			return nil, fmt.Errorf("get item %s: %w: %w: bad MAC", id, store.ErrCorrupt, store.ErrNotFound)
		}
	}
	return c.Memory.GetItems(ctx, tenant, ids)
}

func (c *corruptible) corrupt(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bad[id] = true
}

type apiStack struct {
	url string
	cps *corruptible
}

func newAPIStack(t *testing.T) *apiStack {
	t.Helper()
	m := loadQwen3(t)
	s, err := sim.New(sim.Options{Tokenizer: m.Tokenizer(), Renderer: sim.ModelRenderer(m), ServedModelName: "qwen3", Fast: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)
	cps := &corruptible{Memory: store.NewMemory(), bad: map[string]bool{}}
	srv, err := server.New(server.Options{
		Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Upstream: upstream.New(upstream.Options{BaseURL: simSrv.URL}), Checkpoints: cps,
		Models: map[string]*server.ModelRuntime{"qwen3": mustRuntime(t, stack.ModelConfig{Name: "qwen3", Render: m, MaxModelLen: 32768})},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &apiStack{url: hs.URL, cps: cps}
}

func (a *apiStack) do(t *testing.T, method, path, body string) (int, gjson.Result) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, a.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, gjson.ParseBytes(bytes.TrimSpace(b))
}

func TestAPIRoutes(t *testing.T) {
	t.Parallel()
	a := newAPIStack(t)
	st, resp := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","input":"Hello there."}`)
	if st != 200 {
		t.Fatalf("create = %d %s", st, resp.Raw)
	}
	id := resp.Get("id").Str
	tests := []struct {
		method, path string
		status       int
		param, code  string
	}{
		{"POST", "/v1/responses/compact", 404, "", "unknown_url"},
		{"POST", "/v1/responses/" + id + "/cancel", 400, "", ""},
		{"POST", "/v1/responses/resp_nope/cancel", 404, "", ""},
		{"GET", "/v1/responses/" + id + "/nope", 404, "", "unknown_url"},
		{"POST", "/v1/responses/" + id + "/input_items", 404, "", "unknown_url"},
		{"GET", "/v1/conversations", 404, "", "unknown_url"},
		{"PUT", "/v1/conversations", 404, "", "unknown_url"},
		{"GET", "/v1/conversations/conv_1/nope", 404, "", "unknown_url"},
		{"PATCH", "/v1/conversations/conv_1", 404, "", "unknown_url"},
		{"GET", "/v1/conversations/conv_1/items/i/x", 404, "", "unknown_url"},
		{"GET", "/v1/conversations/conv_1/items", 404, "", ""},
		{"DELETE", "/v1/conversations/conv_1", 404, "", ""},
		{"GET", "/v1/responses/" + id + "?stream=true", 400, "stream", ""},
		{"GET", "/v1/responses/" + id + "?stream=true&starting_after=3", 400, "stream", ""},
		{"GET", "/v1/responses/resp_nope?stream=true", 404, "", ""},
		{"GET", "/v1/responses/" + id + "?starting_after=3", 400, "starting_after", ""},
		{"GET", "/v1/responses/" + id + "?stream=true&starting_after=x", 400, "starting_after", ""},
		{"GET", "/v1/responses/" + id + "?include[]=bogus", 400, "include[0]", ""},
		{"GET", "/v1/responses/" + id + "?include[]=reasoning.encrypted_content&include_obfuscation=false", 200, "", ""},
		{"GET", "/v1/responses/" + id + "?include[]=message.output_text.logprobs", 200, "", ""},
		{"GET", "/v1/responses/" + id + "/input_items?include[]=bogus", 400, "include[0]", ""},
		{"GET", "/v1/responses/" + id + "/input_items?include[]=message.input_image.image_url", 200, "", ""},
	}
	for _, tt := range tests {
		st, body := a.do(t, tt.method, tt.path, "")
		if st != tt.status {
			t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, st, body.Raw, tt.status)
			continue
		}
		if tt.status != 200 && (body.Get("error.param").Str != tt.param || body.Get("error.code").Str != tt.code) {
			t.Errorf("%s %s: error %s, want param %q code %q", tt.method, tt.path, body.Raw, tt.param, tt.code)
		}
	}
}

// TestInputItemsShape: listed items carry content as parts and a status, whatever shape the
// client sent.
func TestInputItemsShape(t *testing.T) {
	t.Parallel()
	a := newAPIStack(t)
	st, resp := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","input":[{"role":"developer","content":"Be brief."},{"role":"assistant","content":"Earlier answer."},{"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]}]}`)
	if st != 200 {
		t.Fatalf("create = %d %s", st, resp.Raw)
	}
	st, list := a.do(t, "GET", "/v1/responses/"+resp.Get("id").Str+"/input_items?order=asc", "")
	if st != 200 {
		t.Fatalf("input_items = %d %s", st, list.Raw)
	}
	want := []struct{ role, part, text string }{{"developer", "input_text", "Be brief."}, {"assistant", "output_text", "Earlier answer."}, {"user", "input_text", "Hi"}}
	items := list.Get("data").Array()
	if len(items) != len(want) {
		t.Fatalf("%d items, want %d: %s", len(items), len(want), list.Raw)
	}
	for i, w := range want {
		it := items[i]
		if it.Get("type").Str != "message" || it.Get("role").Str != w.role || it.Get("status").Str != "completed" ||
			it.Get("content.0.type").Str != w.part || it.Get("content.0.text").Str != w.text || !it.Get("id").Exists() {
			t.Errorf("item %d = %s, want a %s message with a %s part %q and status completed", i, it.Raw, w.role, w.part, w.text)
		}
	}
}

// TestCorruptItems: an unreadable stored item is a 404 for input_items and
// previous_response_not_found for a continuation, never a 5xx.
func TestCorruptItems(t *testing.T) {
	t.Parallel()
	a := newAPIStack(t)
	st, resp := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","input":[{"id":"msg_in1","role":"user","content":"Hello."}]}`)
	if st != 200 {
		t.Fatalf("create = %d %s", st, resp.Raw)
	}
	id := resp.Get("id").Str
	a.cps.corrupt("msg_in1")
	if st, body := a.do(t, "GET", "/v1/responses/"+id+"/input_items", ""); st != 404 {
		t.Errorf("input_items of a corrupt item = %d %s, want 404", st, body.Raw)
	}
	st, body := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","previous_response_id":"`+id+`","input":"More."}`)
	if st != 400 || body.Get("error.code").Str != "previous_response_not_found" || body.Get("error.param").Str != "previous_response_id" {
		t.Errorf("continuation of a corrupt item = %d %s, want 400 previous_response_not_found", st, body.Raw)
	}
}

// TestInputTokensExact: input_tokens counts exactly the prompt a create sends (usage.input_tokens
// as the model server counted it), for new and continued conversations, tools and forced calls.
func TestInputTokensExact(t *testing.T) {
	t.Parallel()
	a := newAPIStack(t)
	tools := `"tools":[{"type":"function","name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},{"type":"function","name":"get_time","parameters":{"type":"object","properties":{}}}]`
	st, first := a.do(t, "POST", "/v1/responses", `{"model":"qwen3","input":"Hello."}`)
	if st != 200 {
		t.Fatalf("create = %d %s", st, first.Raw)
	}
	bodies := []string{
		`{"model":"qwen3","input":"What is the weather in Paris?","instructions":"Be brief."}`,
		`{"input":"No model given."}`,
		`{"model":"qwen3","input":"Weather?",` + tools + `}`,
		`{"model":"qwen3","input":"Weather?",` + tools + `,"tool_choice":"required"}`,
		`{"model":"qwen3","input":"Weather?",` + tools + `,"tool_choice":{"type":"function","name":"get_time"}}`,
		`{"model":"qwen3","input":"Weather?",` + tools + `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}}`,
		`{"model":"qwen3","input":"Think less.","reasoning":{"effort":"none"}}`,
		`{"model":"qwen3","previous_response_id":"` + first.Get("id").Str + `","input":"And again."}`,
	}
	for _, b := range bodies {
		st, count := a.do(t, "POST", "/v1/responses/input_tokens", b)
		if st != 200 || count.Get("object").Str != "response.input_tokens" {
			t.Errorf("input_tokens(%s) = %d %s", b, st, count.Raw)
			continue
		}
		create := b
		if !strings.Contains(b, `"model"`) {
			create = `{"model":"qwen3",` + b[1:]
		}
		st, resp := a.do(t, "POST", "/v1/responses", create)
		if st != 200 {
			t.Errorf("create(%s) = %d %s", create, st, resp.Raw)
			continue
		}
		if got, want := count.Get("input_tokens").Int(), resp.Get("usage.input_tokens").Int(); got != want || got == 0 {
			t.Errorf("input_tokens(%s) = %d, create's usage.input_tokens = %d", b, got, want)
		}
	}
	for _, tt := range []struct{ body, param string }{
		{`{"model":"qwen3","input":"x","conversation":7}`, "conversation"},
		{`{"model":"qwen3","input":"x","conversation":"conv_1","previous_response_id":"resp_1"}`, "conversation"},
		{`{"model":"qwen3","input":[]}`, "input"},
		{`{"model":"qwen3"}`, "input"},
		{`{"model":"qwen3","input":"x","personality":3}`, "personality"},
		{`[1]`, ""},
	} {
		st, body := a.do(t, "POST", "/v1/responses/input_tokens", tt.body)
		if st != 400 || body.Get("error.param").Str != tt.param {
			t.Errorf("input_tokens(%s) = %d %s, want 400 naming %q", tt.body, st, body.Raw, tt.param)
		}
	}
}

// TestNoServerErrorOnOddInput: no input shape yields a 5xx (SDKs retry those).
func TestNoServerErrorOnOddInput(t *testing.T) {
	t.Parallel()
	a := newAPIStack(t)
	many := strings.Repeat(`{"role":"user","content":"x"},`, 10001)
	bodies := []string{
		`{"model":"qwen3","input":[]}`,
		`{"model":"qwen3","input":""}`,
		`{"model":"qwen3","input":[{}]}`,
		`{"model":"qwen3","input":[{"role":"system","content":"only system"}]}`,
		`{"model":"qwen3","input":[{"role":"user","content":[]}]}`,
		`{"model":"qwen3","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`,
		`{"model":"qwen3","input":[{"role":"user","content":null}]}`,
		`{"model":"qwen3","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`,
		`{"model":"qwen3","input":[{"type":"function_call_output","call_id":"c","output":"1"}]}`,
		`{"model":"qwen3","input":[{"type":"reasoning","summary":[]}]}`,
		`{"model":"qwen3","input":[{"type":"item_reference","id":"nope"}]}`,
		`{"model":"qwen3","input":[` + many[:len(many)-1] + `]}`,
		`{"model":"qwen3","input":"x","tools":[{"type":"function","name":"f","parameters":"nope"}]}`,
		`{"model":"qwen3","input":"x","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}}`,
		`{"model":"qwen3","input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"nope"}}}}`,
		`{"model":"qwen3","input":"x","previous_response_id":"resp_nope"}`,
	}
	for _, b := range bodies {
		st, body := a.do(t, "POST", "/v1/responses", b)
		if st >= 500 {
			short := b
			if len(short) > 200 {
				short = short[:200] + "…"
			}
			t.Errorf("POST %s = %d %s", short, st, body.Raw)
		}
	}
}

// mustRuntime builds a model runtime as stitch serve does (stack.NewModelRuntime).
func mustRuntime(t *testing.T, c stack.ModelConfig) *server.ModelRuntime {
	t.Helper()
	rt, err := stack.NewModelRuntime(c)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}
