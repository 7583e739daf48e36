package sim_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/sim"
)

// tokenPrompt returns n distinct token ids starting at from.
func tokenPrompt(from, n int) []uint32 {
	p := make([]uint32, n)
	for i := range p {
		p[i] = uint32(from + i)
	}
	return p
}

// cachedOf sends a non-stream token prompt and returns cached_tokens and the generated ids.
func cachedOf(t *testing.T, base string, prompt []uint32, salt string, maxTokens int) (int, []uint32) {
	t.Helper()
	body := map[string]any{"prompt": prompt, "max_tokens": maxTokens, "return_token_ids": true}
	if salt != "" {
		body["cache_salt"] = salt
	}
	c := complete(t, base, body)
	return c.Usage.cached(), c.Choices[0].TokenIDs
}

func TestPrefixCacheRepeat(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 15, 16, 17, 31, 32, 33, 100, 1000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			_, ts := newTestServer(t, sim.Options{})
			prompt := tokenPrompt(1000, n)
			if got, _ := cachedOf(t, ts.URL, prompt, "s", 5); got != 0 {
				t.Errorf("first request: cached_tokens = %d, want 0", got)
			}
			want := (n - 1) / 16 * 16
			if got, _ := cachedOf(t, ts.URL, prompt, "s", 5); got != want {
				t.Errorf("repeat of %d tokens: cached_tokens = %d, want %d", n, got, want)
			}
		})
	}
}

func TestPrefixCacheHitsGeneratedBlocks(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{OutputLen: 200})
	prompt := ids(t, qwenChat(nil, false, [2]string{"user", "Write a long story please."}))
	_, out := cachedOf(t, ts.URL, prompt, "tenant", 1000)
	if len(out) < 40 {
		t.Fatalf("answer too short for the test: %d tokens", len(out))
	}
	history := slices.Concat(prompt, out)
	next := slices.Concat(history, ids(t, "\n<|im_start|>user\nAnd then?<|im_end|>\n<|im_start|>assistant\n"))
	got, _ := cachedOf(t, ts.URL, next, "tenant", 5)
	// The last sampled token was never forwarded: at most floor((P+G-1)/16) blocks are cached.
	if want := (len(history) - 1) / 16 * 16; got != want {
		t.Errorf("continuation: cached_tokens = %d, want %d (P=%d G=%d)", got, want, len(prompt), len(out))
	}
	if len(prompt)/16*16 >= got {
		t.Errorf("continuation hit no generated block: %d cached of a %d-token prompt", got, len(prompt))
	}
}

func TestPrefixCacheSalt(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{})
	prompt := tokenPrompt(500, 64)
	cachedOf(t, ts.URL, prompt, "alice", 1)
	for _, salt := range []string{"bob", ""} {
		if got, _ := cachedOf(t, ts.URL, prompt, salt, 1); got != 0 {
			t.Errorf("salt %q after alice: cached_tokens = %d, want 0", salt, got)
		}
	}
	if got, _ := cachedOf(t, ts.URL, prompt, "alice", 1); got != 48 {
		t.Errorf("alice again: cached_tokens = %d, want 48", got)
	}
}

func TestPrefixCacheLRUEviction(t *testing.T) {
	t.Parallel()
	s, ts := newTestServer(t, sim.Options{KVBlocks: 4})
	a, b := tokenPrompt(100, 48), tokenPrompt(200, 48)
	// max_tokens 1: the only generated token is the last sampled one, never cached, so each
	// request leaves exactly its 3 prompt blocks.
	cachedOf(t, ts.URL, a, "", 1)
	if st := s.Stats(); st.Blocks != 3 || st.Used != 0 {
		t.Fatalf("after A: %+v, want 3 blocks, none used", st)
	}
	// B needs 3 blocks: one free slot, then A's blocks are evicted tail first (A3, A2).
	cachedOf(t, ts.URL, b, "", 1)
	// A keeps only its first block; re-caching A2 and A3 evicts B's tail (B3, B2).
	if got, _ := cachedOf(t, ts.URL, a, "", 1); got != 16 {
		t.Errorf("A after B: cached_tokens = %d, want 16", got)
	}
	if got, _ := cachedOf(t, ts.URL, b, "", 1); got != 16 {
		t.Errorf("B after A: cached_tokens = %d, want 16", got)
	}
	if st := s.Stats(); st.Blocks != 4 {
		t.Errorf("blocks = %d, want capacity 4", st.Blocks)
	}
}

func TestMetricsAgreeWithUsage(t *testing.T) {
	t.Parallel()
	s, ts := newTestServer(t, sim.Options{ServedModelName: "m"})
	var prompt, cached, completion int
	for i, n := range []int{40, 40, 70, 17, 40} {
		body := map[string]any{"prompt": tokenPrompt(10, n), "max_tokens": 3 + i, "cache_salt": "t"}
		var u *usage
		if i%2 == 0 {
			u = complete(t, ts.URL, body).Usage
		} else {
			body["stream_options"] = map[string]any{"include_usage": true}
			u = collect(t, streamCompletion(t, ts.URL, body)).usage
		}
		prompt += u.PromptTokens
		cached += u.cached()
		completion += u.CompletionTokens
	}
	if cached == 0 {
		t.Fatal("no cache hit in the test sequence")
	}
	m := scrape(t, ts.URL)
	want := map[string]float64{
		`vllm:prefix_cache_queries_total{model_name="m"}`:                         float64(prompt),
		`vllm:prefix_cache_hits_total{model_name="m"}`:                            float64(cached),
		`vllm:prompt_tokens_total{model_name="m"}`:                                float64(prompt),
		`vllm:generation_tokens_total{model_name="m"}`:                            float64(completion),
		`vllm:request_success_total{finished_reason="length",model_name="m"}`:     5,
		`vllm:num_requests_running{model_name="m"}`:                               0,
		`vllm:time_to_first_token_seconds_count{model_name="m"}`:                  5,
		`vllm:request_success_total{finished_reason="abort",model_name="m"}`:      0,
		`vllm:num_requests_waiting{model_name="m"}`:                               0,
		`vllm:kv_cache_usage_perc{model_name="m"}`:                                0,
		`vllm:request_success_total{finished_reason="stop",model_name="m"}`:       0,
		`vllm:time_to_first_token_seconds_bucket{model_name="m",le="+Inf"}`:       5,
		`sim_request_errors_total{status="400"}`:                                  -1, // absent until used
		`vllm:prefix_cache_hits_total{model_name="other"}`:                        -1,
		`vllm:prefix_cache_queries_total{model_name="m",unexpected_label="true"}`: -1,
	}
	for k, v := range want {
		got, ok := m[k]
		if v < 0 {
			if ok {
				t.Errorf("%s present", k)
			}
			continue
		}
		if !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if st := s.Stats(); st.Queries != uint64(prompt) || st.Hits != uint64(cached) {
		t.Errorf("Stats() = %+v, want queries %d hits %d", st, prompt, cached)
	}
}

// scrape reads /metrics into series → value.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func TestPrefixCacheLoRA(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{ServedModelName: "base", LoRAModules: []string{"sql", "law"}})
	prompt := tokenPrompt(900, 40)
	send := func(model string) int {
		return complete(t, ts.URL, map[string]any{"model": model, "prompt": prompt, "max_tokens": 1}).Usage.cached()
	}
	send("sql")
	for _, m := range []string{"base", "law"} {
		if got := send(m); got != 0 {
			t.Errorf("%s after sql: cached_tokens = %d, want 0", m, got)
		}
	}
	if got := send("sql"); got != 32 {
		t.Errorf("sql again: cached_tokens = %d, want 32", got)
	}
	resp, err := http.Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&models); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(models.Data) != 3 || models.Data[0].Parent != nil || models.Data[2].ID != "law" || *models.Data[2].Parent != "base" {
		t.Errorf("models %+v", models.Data)
	}
}
