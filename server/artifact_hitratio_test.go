package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
)

var testSealKey = store.SealKey{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}

// qwen3 loads the real Qwen3 tokenizer and template once per test binary (about half a second).
var qwen3 = sync.OnceValues(func() (*render.Renderer, error) {
	return render.LoadModel(os.DirFS("../testdata/models/qwen3"), render.Options{})
})

func loadQwen3(t testing.TB) *render.Renderer {
	t.Helper()
	m, err := qwen3()
	if err != nil {
		t.Fatalf("load Qwen3: %v", err)
	}
	return m
}

// Through HTTP with the simulator (issue 6): the prefix-cache hit ratio of canonical mode equals
// the no-artifacts baseline exactly (same prompts), exact mode's is at least that, and strictly
// higher when the model's tokenization drifts from the canonical one.

// recordSink collects the simulator's record lines and signals each one: the simulator writes it
// after caching the request's blocks, so a client that waits for it sees a settled cache.
type recordSink struct {
	mu    sync.Mutex
	lines [][]byte
	ch    chan struct{}
}

func newRecordSink() *recordSink { return &recordSink{ch: make(chan struct{}, 4096)} }

func (r *recordSink) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.lines = append(r.lines, bytes.Clone(b))
	r.mu.Unlock()
	r.ch <- struct{}{}
	return len(b), nil
}

// wait blocks until n more record lines arrived.
func (r *recordSink) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-r.ch:
		case <-t.Context().Done():
			t.Fatal("no record line from the simulator")
		}
	}
}

func (r *recordSink) snapshot() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// simStack is stitch (in one of three modes) in front of its own simulator.
type simStack struct {
	url       string
	hs        *httptest.Server
	rec       *recordSink
	sim       *sim.Server
	artifacts *store.Tiered // nil without artifacts
	reg       *prometheus.Registry
}

type stackOptions struct {
	mode  string // "none", "canonical" or "exact"
	sim   sim.Options
	audit float64
}

// newSimStack assembles a server with stack.Open as stitch serve does (its defaults, a 16 MiB
// L1), with the simulator as upstream and checkpoints in memory.
func newSimStack(t *testing.T, o stackOptions) *simStack {
	t.Helper()
	m := loadQwen3(t)
	st := &simStack{rec: newRecordSink(), reg: prometheus.NewRegistry()}
	so := o.sim
	so.Tokenizer, so.Renderer, so.ServedModelName, so.Record = m.Tokenizer(), sim.ModelRenderer(m), "qwen3", st.rec
	so.Fast = so.DecodePerToken == 0 // a per-token delay only holds a generation open (TestArtifactNotWrittenForCancelled)
	s, err := sim.New(so)
	if err != nil {
		t.Fatal(err)
	}
	st.sim = s
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)

	settings := configs.Default()
	profile := configs.ModelProfile{Name: "qwen3"}
	settings.Artifacts.Disabled = o.mode == "none"
	settings.Artifacts.CacheMB, settings.Artifacts.AuditRate = 16, o.audit
	if o.mode != "none" {
		if profile.ContinuationMode, err = store.ParseMode(o.mode); err != nil {
			t.Fatal(err)
		}
	}
	settings.Models = []configs.ModelProfile{profile}
	stk, err := stack.Open(t.Context(), stack.Config{
		Settings: settings, Registry: st.reg,
		Models:      map[string]stack.Model{"qwen3": {Render: m, Family: family.Names{ToolCallParser: "hermes", ReasoningParser: "qwen3"}}},
		Upstream:    upstream.New(upstream.Options{BaseURL: simSrv.URL}),
		Checkpoints: store.NewMemory(), SealKeys: []store.SealKey{testSealKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stk.Close(); err != nil {
			t.Error(err)
		}
	})
	if stk.Artifacts != nil {
		st.artifacts = stk.Artifacts.Tiers
	}
	st.hs = httptest.NewServer(stk.Server)
	t.Cleanup(st.hs.Close)
	st.url = st.hs.URL
	return st
}

// create posts one Responses request (stream:false) and returns the HTTP status and body.
func (st *simStack) create(ctx context.Context, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.url+"/v1/responses", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// sessionScript is one client's deterministic conversation: tool rounds answered with tool
// outputs, and new user messages.
type sessionScript struct {
	r            *rand.Rand
	instructions string
	tools        string
	prev         string
	turns        int
}

func newSessionScript(seed uint64, turns int) *sessionScript {
	r := rand.New(rand.NewPCG(seed, 42))
	return &sessionScript{r: r, turns: turns, instructions: pick(r, instructionsPool[1:]), tools: pick(r, []string{toolsA, toolsB, toolsA + "," + toolsB})}
}

// request builds the next request body from the previous response (nil at the start).
func (s *sessionScript) request(prevBody []byte) []byte {
	var input []json.RawMessage
	for _, it := range gjson.GetBytes(prevBody, "output").Array() {
		if it.Get("type").Str == "function_call" {
			input = append(input, callOutputItem(it.Get("call_id").Str, pick(s.r, toolOutputs)))
		}
	}
	if len(input) == 0 {
		input = append(input, userItem(pick(s.r, []string{"Use get_weather for Paris.", "search the news", "run_code please"})+" "+userText(s.r)))
	}
	b, _ := json.Marshal(struct {
		Model        string            `json:"model"`
		Input        []json.RawMessage `json:"input"`
		Instructions string            `json:"instructions"`
		Tools        json.RawMessage   `json:"tools"`
		MaxOutput    int               `json:"max_output_tokens"`
		Previous     string            `json:"previous_response_id,omitempty"`
	}{"qwen3", input, s.instructions, json.RawMessage("[" + s.tools + "]"), 200, s.prev})
	return b
}

// runSessions drives sessions one after another, each turn waiting for the simulator's record line.
func runSessions(t *testing.T, st *simStack, sessions, turns int) {
	t.Helper()
	for i := range sessions {
		s := newSessionScript(uint64(i), turns)
		var prev []byte
		for turn := range turns {
			status, body, err := st.create(t.Context(), s.request(prev))
			if err != nil || status != http.StatusOK || gjson.GetBytes(body, "status").Str != "completed" {
				t.Fatalf("session %d turn %d: status %d err %v body %.300s", i, turn, status, err, body)
			}
			st.rec.wait(t, 1)
			s.prev, prev = gjson.GetBytes(body, "id").Str, body
		}
	}
}

// hitRatio is Σ cached_tokens / Σ prompt tokens over the record lines.
func hitRatio(lines [][]byte) (float64, int, int) {
	var cached, prompt int
	for _, l := range lines {
		cached += int(gjson.GetBytes(l, "cached_tokens").Int())
		prompt += len(gjson.GetBytes(l, "prompt_token_ids").Array())
	}
	return float64(cached) / float64(max(prompt, 1)), cached, prompt
}

func TestArtifactHitRatio(t *testing.T) {
	sessions, turns := 6, 8
	if raceEnabled || testing.Short() {
		sessions, turns = 3, 6
	}
	for _, drift := range []float64{0, 0.5} {
		t.Run(fmt.Sprintf("drift=%v", drift), func(t *testing.T) {
			ratio := map[string]float64{}
			lines := map[string][][]byte{}
			for _, mode := range []string{"none", "canonical", "exact"} {
				st := newSimStack(t, stackOptions{mode: mode, sim: sim.Options{Seed: 7, Drift: drift, OutputLen: 24}})
				runSessions(t, st, sessions, turns)
				lines[mode] = st.rec.snapshot()
				var c, p int
				ratio[mode], c, p = hitRatio(lines[mode])
				s := st.sim.Stats()
				if uint64(c) != s.Hits || uint64(p) != s.Queries {
					t.Errorf("%s: record lines count %d/%d cached/prompt tokens, sim stats %d/%d", mode, c, p, s.Hits, s.Queries)
				}
				t.Logf("%s: hit ratio %.4f (%d of %d prompt tokens cached, %d requests)", mode, ratio[mode], c, p, len(lines[mode]))
			}
			if len(lines["canonical"]) != len(lines["none"]) {
				t.Fatalf("canonical sent %d requests, no-artifacts %d", len(lines["canonical"]), len(lines["none"]))
			}
			for i := range lines["none"] {
				a := gjson.GetBytes(lines["canonical"][i], "prompt_token_ids").Raw
				b := gjson.GetBytes(lines["none"][i], "prompt_token_ids").Raw
				if a != b {
					t.Fatalf("request %d: canonical prompt ids differ from the no-artifacts stack's", i)
				}
			}
			if ratio["canonical"] != ratio["none"] {
				t.Errorf("canonical hit ratio %v, want exactly the no-artifacts %v", ratio["canonical"], ratio["none"])
			}
			if ratio["exact"] < ratio["canonical"] {
				t.Errorf("exact hit ratio %v below canonical %v", ratio["exact"], ratio["canonical"])
			}
			if drift > 0 && !(ratio["exact"] > ratio["canonical"]) {
				t.Errorf("with drift %v: exact hit ratio %v not above canonical %v", drift, ratio["exact"], ratio["canonical"])
			}
		})
	}
}

// TestArtifactNotWrittenForFailedResponses: a generation that fails (HTTP 500 upstream) or is cut
// off mid-stream (connection dropped) leaves no artifact behind.
func TestArtifactNotWrittenForFailedResponses(t *testing.T) {
	tests := []struct {
		name   string
		sim    sim.Options
		writes int // artifacts written for the two requests
	}{
		{"control: completed", sim.Options{}, 2},
		{"upstream 500", sim.Options{FailRate: 1}, 0},
		{"dropped mid-stream", sim.Options{DropRate: 1, DropAfter: 3}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newSimStack(t, stackOptions{mode: "canonical", sim: tt.sim})
			for _, stream := range []bool{false, true} {
				body := fmt.Sprintf(`{"model":"qwen3","input":"Hello there","stream":%v}`, stream)
				status, resp, err := st.create(t.Context(), []byte(body))
				if err != nil {
					t.Fatal(err)
				}
				completed := status == http.StatusOK && (gjson.GetBytes(resp, "status").Str == "completed" || strings.Contains(string(resp), "response.completed"))
				if completed != (tt.writes > 0) {
					t.Fatalf("stream=%v: status %d, completed %v: %.300s", stream, status, completed, resp)
				}
			}
			if s := st.artifacts.Stats().L1; s.Sets != uint64(tt.writes) || s.Entries != tt.writes {
				t.Errorf("L1: %d sets, %d entries; want %d", s.Sets, s.Entries, tt.writes)
			}
			if n := gatherCounter(t, st.reg, "stitch_artifact_writes_total"); n != float64(tt.writes) {
				t.Errorf("artifact writes = %v, want %d", n, tt.writes)
			}
		})
	}
}

// TestArtifactNotWrittenForCancelled: a client that disconnects mid-generation leaves no artifact.
// The simulator emits the first token and then holds the generation (an hour per token) until
// stitch cancels it; closing stitch's test server waits for the handler to return.
func TestArtifactNotWrittenForCancelled(t *testing.T) {
	st := newSimStack(t, stackOptions{mode: "canonical", sim: sim.Options{DecodePerToken: time.Hour}})
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.url+"/v1/responses",
		strings.NewReader(`{"model":"qwen3","input":"Hello there","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "response.in_progress") {
		// skip to the in_progress event
	}
	cancel() // the upstream request is in flight: stitch has begun the stream
	resp.Body.Close()
	st.hs.Close()
	st.rec.wait(t, 1) // the simulator saw the generation aborted
	if s := st.artifacts.Stats().L1; s.Sets != 0 {
		t.Errorf("L1 after a cancelled response: %d sets, want 0", s.Sets)
	}
	if n := gatherCounter(t, st.reg, "stitch_artifact_writes_total"); n != 0 {
		t.Errorf("artifact writes = %v, want 0", n)
	}
	if last := st.rec.snapshot(); !strings.Contains(string(last[0]), `"finish_reason":"abort"`) {
		t.Errorf("simulator record %s, want an aborted generation", last[0])
	}
}

func gatherCounter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestArtifactConcurrentHTTP runs sessions concurrently through one canonical stack (with
// background audits) and requires the same set of upstream prompts as a sequential no-artifacts
// run: concurrency changes no model-visible id (run with -race).
func TestArtifactConcurrentHTTP(t *testing.T) {
	const sessions, turns = 4, 5
	base := newSimStack(t, stackOptions{mode: "none", sim: sim.Options{Seed: 3, OutputLen: 16}})
	runSessions(t, base, sessions, turns)
	st := newSimStack(t, stackOptions{mode: "canonical", sim: sim.Options{Seed: 3, OutputLen: 16}, audit: 1})
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			s := newSessionScript(uint64(i), turns)
			var prev []byte
			for turn := range turns {
				status, body, err := st.create(t.Context(), s.request(prev))
				if err != nil || status != http.StatusOK {
					t.Errorf("session %d turn %d: status %d err %v", i, turn, status, err)
					return
				}
				s.prev, prev = gjson.GetBytes(body, "id").Str, body
			}
		})
	}
	wg.Wait()
	st.rec.wait(t, sessions*turns)
	prompts := func(lines [][]byte) []string {
		var out []string
		for _, l := range lines {
			out = append(out, gjson.GetBytes(l, "prompt_token_ids").Raw)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(prompts(st.rec.snapshot()), prompts(base.rec.snapshot())) {
		t.Error("concurrent canonical run sent other prompts than the sequential no-artifacts run")
	}
	if n := gatherCounter(t, st.reg, "stitch_audit_mismatch_total"); n != 0 {
		t.Errorf("audit mismatches = %v, want 0", n)
	}
}
