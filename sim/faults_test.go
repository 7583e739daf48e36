package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stitchllm/stitch/sim"
)

// lockedBuffer is an io.Writer safe to read while the server writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimSuffix(b.buf.String(), "\n"), "\n")
}

// recordLine is one --record line.
type recordLine struct {
	Endpoint       string   `json:"endpoint"`
	PromptTokenIDs []uint32 `json:"prompt_token_ids"`
	CacheSalt      *string  `json:"cache_salt"`
	MaxTokens      int      `json:"max_tokens"`
	CachedTokens   int      `json:"cached_tokens"`
	OutputTokenIDs []uint32 `json:"output_token_ids"`
	FinishReason   string   `json:"finish_reason"`
}

func TestRecord(t *testing.T) {
	t.Parallel()
	var rec lockedBuffer
	_, ts := newTestServer(t, sim.Options{Record: &rec})
	prompt := tokenPrompt(300, 40)
	first := complete(t, ts.URL, map[string]any{"prompt": prompt, "max_tokens": 4, "cache_salt": "s", "return_token_ids": true})
	second := collect(t, streamCompletion(t, ts.URL, map[string]any{"prompt": prompt, "max_tokens": 6, "return_token_ids": true}))
	lines := rec.lines()
	if len(lines) != 2 {
		t.Fatalf("record has %d lines: %q", len(lines), lines)
	}
	var r [2]recordLine
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &r[i]); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if !strings.HasPrefix(l, `{"endpoint":"/v1/completions","prompt_token_ids":[`) {
			t.Errorf("line %q: keys out of order", l)
		}
	}
	if !slices.Equal(r[0].PromptTokenIDs, prompt) || r[0].CacheSalt == nil || *r[0].CacheSalt != "s" || r[0].MaxTokens != 4 ||
		!slices.Equal(r[0].OutputTokenIDs, first.Choices[0].TokenIDs) || r[0].FinishReason != "length" || r[0].CachedTokens != 0 {
		t.Errorf("first line %+v", r[0])
	}
	if r[1].CacheSalt != nil || !slices.Equal(r[1].OutputTokenIDs, second.ids) || r[1].MaxTokens != 6 {
		t.Errorf("second line %+v", r[1])
	}
}

func TestFailRate(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{FailRate: 1})
	status, out := post(t, ts.URL+"/v1/completions", `{"prompt":"x"}`)
	if status != 500 || !strings.Contains(string(out), `"type":"InternalServerError"`) || !strings.Contains(string(out), `"code":500`) {
		t.Errorf("got %d %s", status, out)
	}
	// Non-generation endpoints never fail.
	if resp, err := http.Get(ts.URL + "/health"); err != nil || resp.StatusCode != 200 {
		t.Errorf("health with fail rate 1: %v %v", resp, err)
	}
}

func TestDrop(t *testing.T) {
	t.Parallel()
	var rec lockedBuffer
	_, ts := newTestServer(t, sim.Options{DropRate: 1, DropAfter: 3, Record: &rec})
	raw := mustJSON(map[string]any{"prompt": "hello", "max_tokens": 10, "stream": true, "return_token_ids": true})
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
		}
	}
	resp.Body.Close()
	if sc.Err() == nil {
		t.Errorf("stream ended cleanly; want a cut connection")
	}
	if len(events) != 3 || slices.Contains(events, "[DONE]") {
		t.Errorf("got %d events %q, want 3 token chunks and no [DONE]", len(events), events)
	}
	// Non-stream: the connection closes with no response.
	if _, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hello","max_tokens":10}`)); err == nil {
		t.Errorf("non-stream drop answered")
	}
	for _, l := range rec.lines() {
		var r recordLine
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.FinishReason != "abort" || len(r.OutputTokenIDs) != 3 {
			t.Errorf("record %q: want abort after 3 tokens", l)
		}
	}
}

// chanWriter sends each write to a channel.
type chanWriter chan string

func (c chanWriter) Write(p []byte) (int, error) {
	c <- string(p)
	return len(p), nil
}

func TestClientDisconnectStopsGeneration(t *testing.T) {
	t.Parallel()
	rec := make(chanWriter, 4)
	s, err := sim.New(sim.Options{Tokenizer: testTokenizer(t), DecodePerToken: time.Hour, Record: rec})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	raw := mustJSON(map[string]any{"prompt": "hello", "max_tokens": 100, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions", strings.NewReader(raw))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// The first token comes at once (no TTFT configured); the second would take an hour.
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q: %v", line, err)
	}
	cancel()
	resp.Body.Close()
	select {
	case l := <-rec:
		var r recordLine
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.FinishReason != "abort" || len(r.OutputTokenIDs) != 1 {
			t.Errorf("record %q: want abort after 1 token", l)
		}
	case <-time.After(30 * time.Second): // failure guard only; the abort is immediate
		t.Fatal("generation did not stop after the client left")
	}
	if st := s.Stats(); st.Used != 0 {
		t.Errorf("blocks still held after abort: %+v", st)
	}
}

func TestDrift(t *testing.T) {
	t.Parallel()
	_, plain := newTestServer(t, sim.Options{Seed: 1})
	_, drifting := newTestServer(t, sim.Options{Seed: 1, Drift: 1})
	tok := testTokenizer(t)
	prompt := ids(t, qwenChat(nil, true, [2]string{"user", "hi"}))
	body := func() map[string]any {
		return map[string]any{"prompt": prompt, "max_tokens": 2000, "return_token_ids": true}
	}
	a := complete(t, plain.URL, body()).Choices[0]
	b := complete(t, drifting.URL, body()).Choices[0]
	if slices.Equal(a.TokenIDs, b.TokenIDs) {
		t.Fatal("drift 1 sent the canonical tokenization")
	}
	if a.Text != b.Text || tok.Decode(a.TokenIDs) != tok.Decode(b.TokenIDs) {
		t.Errorf("drift changed the text: %q vs %q", a.Text, b.Text)
	}
	body2 := b.TokenIDs[:len(b.TokenIDs)-1] // without <|im_end|>
	if !slices.Equal(tok.Encode(tok.Decode(body2)), a.TokenIDs[:len(a.TokenIDs)-1]) {
		t.Errorf("re-encoding the drifted text does not give the canonical ids")
	}
	if len(b.TokenIDs) != len(a.TokenIDs)+1 {
		t.Errorf("drift should split exactly one token: %d vs %d tokens", len(b.TokenIDs), len(a.TokenIDs))
	}

	// Markup tokens (<tool_call>, <think>) are never spelled out, whatever token drift picks.
	tool := qwenChat([]string{searchTool}, false, [2]string{"user", "search it"})
	for seed := range 20 {
		c := complete(t, drifting.URL, map[string]any{"prompt": ids(t, tool), "max_tokens": 2000, "return_token_ids": true, "seed": seed}).Choices[0]
		if !slices.Contains(c.TokenIDs, 151657) || !slices.Contains(c.TokenIDs, 151658) {
			t.Fatalf("seed %d: drifted tool call lost its markup tokens: %q", seed, c.Text)
		}
	}
}
