package server_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
)

// keyAuth maps API keys to tenants.
type keyAuth map[string]string

func (k keyAuth) Tenant(key string) (string, bool) { t, ok := k[key]; return t, ok }

// convStack is stitch (with artifacts) in front of the recording simulator.
type convStack struct {
	url    string
	reg    *prometheus.Registry
	record *lockedBuffer
}

func newConvStack(t *testing.T, tweaks ...func(*server.Options)) *convStack {
	t.Helper()
	m := loadQwen3(t)
	rec := &lockedBuffer{}
	s, err := sim.New(sim.Options{Tokenizer: m.Tokenizer(), Renderer: sim.ModelRenderer(m), ServedModelName: "qwen3", Fast: true, Record: rec,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)
	checkpoints := store.NewMemory()
	sealer, err := store.NewSealer([]store.SealKey{testSealKey}, store.SealerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	arts, err := stack.NewArtifacts(stack.ArtifactsConfig{Sealer: sealer, CacheMB: 16, HotMB: 64, AuditRate: 1, SyncAudit: true,
		Checkpoints: checkpoints, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arts.Close() })
	opts := server.Options{
		Logger: slog.New(slog.DiscardHandler), Registry: reg, Upstream: upstream.New(upstream.Options{BaseURL: simSrv.URL}),
		Checkpoints: checkpoints, Auth: keyAuth{"key-a": "acme", "key-b": "globex"},
		Models: map[string]*server.ModelRuntime{"qwen3": mustRuntime(t, stack.ModelConfig{Name: "qwen3", Render: m, MaxModelLen: 32768, Artifacts: arts})},
	}
	for _, tweak := range tweaks {
		tweak(&opts)
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &convStack{url: hs.URL, reg: reg, record: rec}
}

func (c *convStack) do(t *testing.T, key, method, path, body string) (int, gjson.Result) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, c.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, gjson.ParseBytes(bytes.TrimSpace(b))
}

func (c *convStack) must(t *testing.T, method, path, body string) gjson.Result {
	t.Helper()
	st, r := c.do(t, "key-a", method, path, body)
	if st != 200 {
		t.Fatalf("%s %s %s = %d %s", method, path, body, st, r.Raw)
	}
	return r
}

func (c *convStack) outcome(t *testing.T, outcome string) float64 {
	t.Helper()
	mfs, err := c.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "stitch_artifact_resolutions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestConversationsAPI: create, retrieve, update, delete and the items routes, with paging, in
// OpenAI's shapes, scoped to the tenant.
func TestConversationsAPI(t *testing.T) {
	t.Parallel()
	c := newConvStack(t)
	conv := c.must(t, "POST", "/v1/conversations", `{"metadata":{"topic":"demo"},"items":[{"type":"message","role":"user","content":"Hello!"},{"role":"assistant","content":[{"type":"output_text","text":"Hi."}]}]}`)
	id := conv.Get("id").Str
	if !strings.HasPrefix(id, "conv_") || conv.Get("object").Str != "conversation" || conv.Get("metadata.topic").Str != "demo" || conv.Get("created_at").Int() == 0 {
		t.Fatalf("create = %s", conv.Raw)
	}
	if got := c.must(t, "GET", "/v1/conversations/"+id, ""); got.Raw != conv.Raw {
		t.Errorf("retrieve = %s, want %s", got.Raw, conv.Raw)
	}
	if got := c.must(t, "POST", "/v1/conversations/"+id, `{"metadata":{"topic":"other"}}`); got.Get("metadata.topic").Str != "other" {
		t.Errorf("update = %s", got.Raw)
	}
	added := c.must(t, "POST", "/v1/conversations/"+id+"/items", `{"items":[{"role":"user","content":"One."},{"role":"user","content":"Two."}]}`)
	if added.Get("object").Str != "list" || added.Get("data.#").Int() != 2 || added.Get("data.0.content.0.text").Str != "One." {
		t.Fatalf("items.create = %s", added.Raw)
	}
	all := c.must(t, "GET", "/v1/conversations/"+id+"/items?order=asc", "")
	var texts []string
	for _, it := range all.Get("data").Array() {
		texts = append(texts, it.Get("content.0.text").Str)
	}
	if fmt.Sprint(texts) != "[Hello! Hi. One. Two.]" || all.Get("has_more").Bool() || all.Get("data.0.status").Str != "completed" {
		t.Fatalf("items.list asc = %v %s", texts, all.Raw)
	}
	page := c.must(t, "GET", "/v1/conversations/"+id+"/items?limit=2", "")
	if page.Get("data.0.content.0.text").Str != "Two." || page.Get("data.#").Int() != 2 || !page.Get("has_more").Bool() {
		t.Fatalf("items.list desc limit 2 = %s", page.Raw)
	}
	rest := c.must(t, "GET", "/v1/conversations/"+id+"/items?limit=2&after="+page.Get("last_id").Str, "")
	if rest.Get("data.0.content.0.text").Str != "Hi." || rest.Get("data.1.content.0.text").Str != "Hello!" || rest.Get("has_more").Bool() {
		t.Fatalf("items.list after = %s", rest.Raw)
	}
	itemID := added.Get("data.0.id").Str
	if got := c.must(t, "GET", "/v1/conversations/"+id+"/items/"+itemID, ""); got.Get("id").Str != itemID || got.Get("content.0.text").Str != "One." {
		t.Errorf("items.retrieve = %s", got.Raw)
	}
	if got := c.must(t, "DELETE", "/v1/conversations/"+id+"/items/"+itemID, ""); got.Get("object").Str != "conversation" || got.Get("id").Str != id {
		t.Errorf("items.delete = %s", got.Raw)
	}
	for _, tt := range []struct {
		key, method, path, body string
		status                  int
		param                   string
	}{
		{"key-a", "GET", "/v1/conversations/" + id + "/items/" + itemID, "", 404, ""},
		{"key-a", "DELETE", "/v1/conversations/" + id + "/items/" + itemID, "", 404, ""},
		{"key-b", "GET", "/v1/conversations/" + id, "", 404, ""},
		{"key-b", "GET", "/v1/conversations/" + id + "/items", "", 404, ""},
		{"key-b", "POST", "/v1/conversations/" + id + "/items", `{"items":[{"role":"user","content":"x"}]}`, 404, ""},
		{"key-b", "DELETE", "/v1/conversations/" + id, "", 404, ""},
		{"key-b", "POST", "/v1/responses", `{"model":"qwen3","input":"x","conversation":"` + id + `"}`, 404, "conversation"},
		{"key-a", "POST", "/v1/conversations", `{"items":"nope"}`, 400, "items"},
		{"key-a", "POST", "/v1/conversations", `{"items":[{"type":"bogus"}]}`, 400, "items[0].type"},
		{"key-a", "POST", "/v1/conversations", `{"metadata":{"k":1}}`, 400, "metadata.k"},
		{"key-a", "POST", "/v1/conversations", `{"bogus":1}`, 400, "bogus"},
		{"key-a", "POST", "/v1/conversations/" + id, `{}`, 400, "metadata"},
		{"key-a", "POST", "/v1/conversations/" + id + "/items", `{"items":[]}`, 400, "items"},
		{"key-a", "GET", "/v1/conversations/" + id + "/items?limit=0", "", 400, "limit"},
		{"key-a", "GET", "/v1/conversations/" + id + "/items?after=nope", "", 400, "after"},
		{"key-a", "POST", "/v1/responses", `{"model":"qwen3","input":"x","conversation":{"id":"` + id + `"},"previous_response_id":"resp_1"}`, 400, "conversation"},
	} {
		st, body := c.do(t, tt.key, tt.method, tt.path, tt.body)
		if st != tt.status || (tt.param != "" && body.Get("error.param").Str != tt.param) {
			t.Errorf("%s %s %s %s = %d %s, want %d naming %q", tt.key, tt.method, tt.path, tt.body, st, body.Raw, tt.status, tt.param)
		}
	}
	if got := c.must(t, "DELETE", "/v1/conversations/"+id, ""); got.Get("object").Str != "conversation.deleted" || !got.Get("deleted").Bool() {
		t.Errorf("delete = %s", got.Raw)
	}
	if st, _ := c.do(t, "key-a", "GET", "/v1/conversations/"+id, ""); st != 404 {
		t.Errorf("retrieve after delete = %d", st)
	}
}

// TestConversationTurnsEqualChain: turns through a conversation send the model exactly the
// prompts of the same turns chained with previous_response_id (themselves a full render's, see
// TestUpstreamIDsEqualRender); an unedited conversation continues from its last response's
// artifact, and one edited by hand is a full render with the same ids.
func TestConversationTurnsEqualChain(t *testing.T) {
	t.Parallel()
	c := newConvStack(t)
	prompts := func() []string {
		var out []string
		for _, l := range c.record.lines() {
			out = append(out, gjson.Get(l, "prompt_token_ids").Raw)
		}
		return out
	}
	inputs := []string{`"What is 2+2?"`, `"And 3+3?"`, `"Thanks."`}
	prev := ""
	for i, in := range inputs {
		body := `{"model":"qwen3","instructions":"Be terse.","input":` + in
		if i > 0 {
			body += `,"previous_response_id":"` + prev + `"`
		}
		prev = c.must(t, "POST", "/v1/responses", body+"}").Get("id").Str
	}
	hits := c.outcome(t, "hit_local")
	conv := c.must(t, "POST", "/v1/conversations", `{}`).Get("id").Str
	var last gjson.Result
	for _, in := range inputs {
		last = c.must(t, "POST", "/v1/responses", `{"model":"qwen3","instructions":"Be terse.","input":`+in+`,"conversation":"`+conv+`"}`)
		if last.Get("conversation.id").Str != conv {
			t.Fatalf("response %s does not name its conversation", last.Raw)
		}
	}
	if got := c.outcome(t, "hit_local") - hits; got != 2 {
		t.Errorf("conversation continuations from an artifact: %v, want 2", got)
	}
	p := prompts()
	if len(p) != 6 {
		t.Fatalf("%d upstream requests, want 6", len(p))
	}
	for i := range inputs {
		if p[i] != p[3+i] {
			t.Errorf("turn %d: the conversation's prompt differs from the chain's", i+1)
		}
	}
	// The conversation holds each turn's input and output.
	items := c.must(t, "GET", "/v1/conversations/"+conv+"/items?order=asc&limit=100", "")
	if n := items.Get("data.#").Int(); n < 6 || items.Get("data.0.content.0.text").Str != "What is 2+2?" {
		t.Fatalf("conversation items = %s", items.Raw)
	}
	// Edited by hand: a full render, the same prompt as the chain given the same items.
	c.must(t, "POST", "/v1/conversations/"+conv+"/items", `{"items":[{"role":"user","content":"Extra."}]}`)
	news := c.outcome(t, "new")
	c.must(t, "POST", "/v1/responses", `{"model":"qwen3","instructions":"Be terse.","input":"Last.","conversation":"`+conv+`"}`)
	c.must(t, "POST", "/v1/responses", `{"model":"qwen3","instructions":"Be terse.","previous_response_id":"`+prev+`","input":[{"role":"user","content":"Extra."},{"role":"user","content":"Last."}]}`)
	if got := c.outcome(t, "new") - news; got != 1 {
		t.Errorf("full renders after the edit: %v, want 1 (the conversation's turn)", got)
	}
	p = prompts()
	if len(p) != 8 || p[6] != p[7] {
		t.Errorf("after an edit: the conversation's prompt differs from the chain's")
	}
	// Continuing the conversation's response by id also works (its checkpoint holds the items).
	c.must(t, "POST", "/v1/responses", `{"model":"qwen3","previous_response_id":"`+last.Get("id").Str+`","input":"Via id."}`)
	if st, in := c.do(t, "key-a", "GET", "/v1/responses/"+last.Get("id").Str+"/input_items?order=asc", ""); st != 200 || in.Get("data.0.content.0.text").Str != "What is 2+2?" {
		t.Errorf("input_items of a conversation response = %d %s", st, in.Raw)
	}
}

// TestConversationItemBound: a conversation holds at most --max-input-items items (they are one
// prompt's messages): adding past it is a 400 naming items, a turn that would pass it a 400
// naming conversation before it generates; the turn admitted below the bound keeps its output.
func TestConversationItemBound(t *testing.T) {
	c := newConvStack(t, func(o *server.Options) { o.MaxInputItems = 6 })
	st, r := c.do(t, "key-a", "POST", "/v1/conversations", `{"items":[`+strings.Repeat(`{"role":"user","content":"x"},`, 6)+`{"role":"user","content":"x"}]}`)
	if st != 400 || r.Get("error.param").Str != "items" {
		t.Fatalf("create with 7 items of 6 = %d %s, want 400 param items", st, r.Raw)
	}
	conv := c.must(t, "POST", "/v1/conversations", `{"items":[{"role":"user","content":"Hi"}]}`).Get("id").Str
	c.must(t, "POST", "/v1/responses", `{"model":"qwen3","conversation":"`+conv+`","input":"Hello."}`)
	have := len(c.must(t, "GET", "/v1/conversations/"+conv+"/items?limit=100", "").Get("data").Array())
	if have >= 6 {
		t.Fatalf("conversation holds %d items after one turn; the test needs fewer than 6", have)
	}
	items := func(n int) string {
		return `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"a"},`, n), ",") + `]}`
	}
	st, r = c.do(t, "key-a", "POST", "/v1/conversations/"+conv+"/items", items(6-have+1))
	if st != 400 || r.Get("error.param").Str != "items" {
		t.Fatalf("adding %d items to %d of 6 = %d %s, want 400 param items", 6-have+1, have, st, r.Raw)
	}
	c.must(t, "POST", "/v1/conversations/"+conv+"/items", items(6-have))
	st, r = c.do(t, "key-a", "POST", "/v1/responses", `{"model":"qwen3","conversation":"`+conv+`","input":"More."}`)
	if st != 400 || r.Get("error.param").Str != "conversation" {
		t.Fatalf("a turn on a full conversation = %d %s, want 400 param conversation", st, r.Raw)
	}
	if n := len(c.must(t, "GET", "/v1/conversations/"+conv+"/items?limit=100", "").Get("data").Array()); n != 6 {
		t.Errorf("conversation holds %d items, want 6", n)
	}
}
