package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stitchllm/stitch/configs/demomodel"
	"github.com/stitchllm/stitch/render"
)

func loadDemo(t testing.TB) *render.Renderer {
	t.Helper()
	fsys, err := demomodel.FS()
	if err != nil {
		t.Fatal(err)
	}
	m, err := render.LoadModel(fsys, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tinyWorkload is 2 sessions × 3 turns with no simulated latency.
func tinyWorkload() Workload {
	w := QuickWorkload()
	w.Sessions, w.Turns, w.Concurrency, w.ToolOutputTokens = 2, 3, 2, 400
	w.TTFTBase, w.PrefillPerToken, w.DecodePerToken = 0, 0, 0
	return w
}

// TestRunTiny drives a tiny workload through all three modes end to end and checks bench.json's
// shape and that canonical's hit ratio equals full render's exactly (tools/benchplot's test draws
// the plots of such a file).
func TestRunTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("drives three proxies and simulators")
	}
	m := loadDemo(t)
	res, err := Run(context.Background(), Options{Workload: tinyWorkload(), Model: m, Sim: InProcessSim{Model: m}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := res.WriteJSON(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Workload map[string]json.RawMessage   `json:"workload"`
		Modes    []map[string]json.RawMessage `json:"modes"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("bench.json: %v", err)
	}
	for _, k := range []string{"sessions", "turns", "concurrency", "seed", "drift"} {
		if _, ok := doc.Workload[k]; !ok {
			t.Errorf("workload lacks %q", k)
		}
	}
	var names []string
	for _, md := range doc.Modes {
		var name string
		_ = json.Unmarshal(md["mode"], &name)
		names = append(names, name)
		for _, k := range []string{"hit_ratio", "prep_ms_p50", "prep_ms_p99", "ttft_ms_p50", "ttft_ms_p99",
			"cpu_s_per_turn", "bytes_to_upstream", "bytes_from_clients", "peak_rss_mb",
			"turn_cpu_ms_p50", "turn_cpu_l1_ms_p50", "turn_cpu_redis_ms_p50", "turn_alloc_kb_p50", "turn_cpu_ratio_vs_full",
			"prep_bound_ms_p50", "prep_bound_cpu_ms_p50", "memory", "turn_samples"} {
			if _, ok := md[k]; !ok {
				t.Errorf("mode %s lacks %q", name, k)
			}
		}
		var buckets map[string]*float64
		if err := json.Unmarshal(md["prep_ms_p50"], &buckets); err != nil {
			t.Errorf("mode %s prep_ms_p50: %v", name, err)
		}
		if got := slices.Sorted(mapsKeys(buckets)); !cmp.Equal(got, []string{"100k", "10k", "1k"}) {
			t.Errorf("mode %s prep_ms_p50 keys = %v", name, got)
		}
	}
	if diff := cmp.Diff([]string{"full", "canonical", "exact"}, names); diff != "" {
		t.Errorf("modes (-want +got):\n%s", diff)
	}

	full, canon, exact := res.mode(ModeFull), res.mode(ModeCanonical), res.mode(ModeExact)
	if full.Turns != 6 || canon.Turns != 6 || exact.Turns != 6 {
		t.Errorf("turns = %d, %d, %d, want 6 each", full.Turns, canon.Turns, exact.Turns)
	}
	if full.PromptTokens == 0 || full.BytesToUpstream == 0 || full.BytesFromClients == 0 {
		t.Errorf("full mode measured nothing: %+v", full)
	}
	if canon.HitRatio != full.HitRatio || canon.CachedTokens != full.CachedTokens {
		t.Errorf("canonical hit ratio %v (%d cached) != full %v (%d cached)", canon.HitRatio, canon.CachedTokens, full.HitRatio, full.CachedTokens)
	}
	if canon.Outcomes["hit_local"] == 0 {
		t.Errorf("canonical never took the fast path: %v", canon.Outcomes)
	}
	if full.PromptTokensTokenized <= canon.PromptTokensTokenized {
		t.Errorf("full tokenized %d tokens, canonical %d: want full > canonical", full.PromptTokensTokenized, canon.PromptTokensTokenized)
	}
	if full.Storage != nil {
		t.Errorf("full mode reports storage: %+v", full.Storage)
	}
	_, redisErr := exec.LookPath("redis-server")
	checkTurnPass(t, res, redisErr == nil)
	for _, m := range []*ModeResult{canon, exact} {
		s := m.Storage
		if s == nil || s.Conversations != tinyWorkload().Sessions || s.L1BytesPerConversation == 0 || s.LatestArtifactBytes.L1 == 0 ||
			s.HotBytesPerConversation == 0 || s.LatestArtifactBytes.Hot == 0 {
			t.Errorf("mode %s storage = %+v", m.Mode, s)
			continue
		}
		if (s.RedisBytesPerConversation != nil) != (redisErr == nil) {
			t.Errorf("mode %s: Redis bytes reported %v with redis-server on PATH %v", m.Mode, s.RedisBytesPerConversation != nil, redisErr == nil)
		}
		t.Logf("mode %s storage ratios: hot %.2f L1 %.2f", m.Mode, s.Ratio.Hot, s.Ratio.L1)
		if s.Ratio.Hot > 1.5 || s.Ratio.L1 > 1.5 || (s.Ratio.Redis != nil && *s.Ratio.Redis > 1.5) {
			t.Errorf("mode %s holds more than 1.5× the latest entry per conversation: %+v", m.Mode, s.Ratio)
		}
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestScriptDeterministic(t *testing.T) {
	t.Parallel()
	w := DefaultWorkload()
	a, b := newScript(w, 3), newScript(w, 3)
	for i := range 5 {
		if x, y := a.userMessage(i == 0), b.userMessage(i == 0); x != y {
			t.Fatalf("userMessage differs: %q vs %q", x, y)
		}
		if x, y := a.toolOutput("read_file", 500), b.toolOutput("read_file", 500); x != y {
			t.Fatalf("toolOutput differs at %d", i)
		}
	}
	if c := newScript(w, 4); c.toolOutput("query_db", 500) == newScript(w, 3).toolOutput("query_db", 500) {
		t.Error("sessions 3 and 4 draw the same tool output")
	}
}

func TestToolOutputSize(t *testing.T) {
	t.Parallel()
	s := newScript(DefaultWorkload(), 0)
	for _, name := range []string{"read_file", "query_db", "search_logs", "run_tests"} {
		out := s.toolOutput(name, 3000)
		// Sizes are uniform in [T/3, 5T/3] tokens at 1.9 to 2.9 bytes per token.
		if n := len(out); n < 1000*19/10 || n > 5000*29/10+2048 {
			t.Errorf("toolOutput(%s, 3000) is %d bytes", name, n)
		}
	}
}

func TestBucketOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tokens int
		want   string
	}{
		{0, ""}, {700, ""}, {708, "1k"}, {1000, "1k"}, {1414, "1k"}, {1415, ""}, {5000, ""},
		{8000, "10k"}, {14142, "10k"}, {70711, "100k"}, {141420, "100k"}, {141422, ""},
	}
	for _, tt := range tests {
		if got := bucketOf(tt.tokens); got != tt.want {
			t.Errorf("bucketOf(%d) = %q, want %q", tt.tokens, got, tt.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"empty", nil, 50, 0},
		{"one", []float64{3}, 99, 3},
		{"median odd", []float64{5, 1, 3}, 50, 3},
		{"median even", []float64{4, 1, 3, 2}, 50, 2},
		{"p99 of 100", seq(100), 99, 99},
		{"p99 of 10", seq(10), 99, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.xs, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.xs, tt.p, got, tt.want)
			}
		})
	}
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

func TestParsePrefixCounters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    SimStats
		wantErr bool
	}{
		{"plain", "# HELP x\nvllm:prefix_cache_queries_total 1234\nvllm:prefix_cache_hits_total 1000\n", SimStats{Queries: 1234, Hits: 1000}, false},
		{"labels summed", "vllm:prefix_cache_queries_total{model_name=\"a\"} 10\nvllm:prefix_cache_queries_total{model_name=\"b\"} 5\nvllm:prefix_cache_hits_total{model_name=\"a\"} 4e+00\n", SimStats{Queries: 15, Hits: 4}, false},
		{"missing", "vllm:prefix_cache_queries_total 1\n", SimStats{Queries: 1}, true},
		{"bad number", "vllm:prefix_cache_queries_total x\nvllm:prefix_cache_hits_total 1\n", SimStats{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePrefixCounters(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parsePrefixCounters err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("parsePrefixCounters = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzParsePrefixCounters(f *testing.F) {
	f.Add("vllm:prefix_cache_queries_total 1234\nvllm:prefix_cache_hits_total 1000\n")
	f.Add("vllm:prefix_cache_queries_total{a=\"b\"} 1e3\n")
	f.Add("vllm:prefix_cache_hits_total\n")
	f.Fuzz(func(t *testing.T, in string) {
		_, _ = parsePrefixCounters(strings.NewReader(in)) // must not panic
	})
}

// TestMeasureStreamingTiny runs the streaming measurement at its smallest and checks that the CPU
// comparison with the reverse proxy is filled in (values, not their size: that is the machine's).
func TestMeasureStreamingTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a proxy, a reverse proxy and a simulator")
	}
	m := loadDemo(t)
	res, err := MeasureStreaming(context.Background(), StreamingOptions{
		Model: m, Sim: InProcessSim{Model: m}, Workload: tinyWorkload(),
		Tokens: 200, Reps: 1, CPUReps: 2, CPUTokens: 300, Levels: []int{1}, SweepTokens: 10, Decode: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.CPUReps != 2 || !res.SimInProcess {
		t.Errorf("cpu_reps %d, sim_in_process %v", res.CPUReps, res.SimInProcess)
	}
	if res.ProxyReads < 1 || res.ReverseProxyReads < 1 {
		t.Errorf("client reads %d / %d", res.ProxyReads, res.ReverseProxyReads)
	}
	if res.PacedCPUReps != 1 || res.PacedCPUUS != 50 || res.PacedProxyCPURatio <= 0 {
		t.Errorf("paced comparison: %d pairs at %g µs/token, ratio %g", res.PacedCPUReps, res.PacedCPUUS, res.PacedProxyCPURatio)
	}
	if res.ProxyStreamTokens < 1 || res.ProxyStreamTokens != res.ReverseProxyStreamTokens {
		t.Errorf("stream tokens %d through stitch, %d through the reverse proxy: not the same stream", res.ProxyStreamTokens, res.ReverseProxyStreamTokens)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"proxy_cpu_us_per_token", "reverse_proxy_cpu_us_per_token", "proxy_cpu_ratio"} {
		if !strings.Contains(string(b), `"`+k+`":`) {
			t.Errorf("bench.json streaming lacks %s", k)
		}
	}
}

// TestRatiosVsFull: each mode's *_ratio_vs_full fields are full's p50 over the mode's, per bucket,
// null where a bucket has no sample on either side and everywhere when the run had no full mode.
func TestRatiosVsFull(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	full := ModeResult{Mode: "full", PrepCPUMSP50: BucketMS{K1: v(2), K10: v(20), K100: v(200)},
		PrepColdCPUMSP50: BucketMS{K1: v(3), K100: v(300)}}
	canon := ModeResult{Mode: "canonical", PrepCPUMSP50: BucketMS{K1: v(1), K100: v(5)},
		PrepColdCPUMSP50: BucketMS{K1: v(3), K10: v(4), K100: v(20)}}
	ratios := func(r *Result) map[string]map[string]json.RawMessage {
		t.Helper()
		r.fillRatios()
		b, err := json.Marshal(r.Modes[len(r.Modes)-1])
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		out := map[string]map[string]json.RawMessage{}
		for _, k := range []string{"prep_ratio_vs_full", "prep_cpu_ratio_vs_full", "prep_cold_ratio_vs_full", "prep_cold_cpu_ratio_vs_full"} {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(doc[k], &m); err != nil {
				t.Fatalf("%s: %v (%s)", k, err, doc[k])
			}
			out[k] = m
		}
		return out
	}
	asText := func(m map[string]json.RawMessage) map[string]string {
		s := map[string]string{}
		for k, v := range m {
			s[k] = string(v)
		}
		return s
	}
	got := ratios(&Result{Modes: []ModeResult{full, canon}})
	null := map[string]string{"1k": "null", "10k": "null", "100k": "null"}
	for k, want := range map[string]map[string]string{
		"prep_ratio_vs_full":          null,
		"prep_cpu_ratio_vs_full":      {"1k": "2", "10k": "null", "100k": "40"},
		"prep_cold_ratio_vs_full":     null,
		"prep_cold_cpu_ratio_vs_full": {"1k": "1", "10k": "null", "100k": "15"},
	} {
		if diff := cmp.Diff(want, asText(got[k])); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	// The verdicts read the same fields: ≥ 20× warm and ≥ 10× cold at 100k (issue 20).
	both := &Result{Modes: []ModeResult{full, canon}}
	both.fillRatios()
	checks := strings.Join(both.Checks(), "\n")
	for _, want := range []string{"prep p50 @100k (CPU): full / canonical = 40.0× (want ≥ 20×: ok)",
		"prep p50 @100k (cold CPU): full / canonical = 15.0× (want ≥ 10×: ok)", "prep p50 @1k (cold CPU): full / canonical = 1.0×\n"} {
		if !strings.Contains(checks+"\n", want) {
			t.Errorf("checks lack %q:\n%s", want, checks)
		}
	}
	for k, m := range ratios(&Result{Modes: []ModeResult{canon}}) {
		if diff := cmp.Diff(null, asText(m)); diff != "" {
			t.Errorf("without a full mode, %s (-want +got):\n%s", k, diff)
		}
	}
}

// checkTurnPass checks the whole-turn pass: every mode replayed its sampled turns down each of
// its paths, taking the path named (the hot entry, L1, Redis), with a CPU time per repetition,
// and reports its memory against the formula.
func checkTurnPass(t *testing.T, res *Result, redis bool) {
	t.Helper()
	for i := range res.Modes {
		m := &res.Modes[i]
		if m.Memory == nil || m.Memory.BoundMB <= 0 || m.Memory.RSSPeakMB != m.PeakRSSMB {
			t.Errorf("mode %s memory = %+v (peak RSS %v)", m.Mode, m.Memory, m.PeakRSSMB)
		}
		want := []string{pathHot}
		if m.Mode != string(ModeFull) {
			want = append(want, pathL1)
			if redis {
				want = append(want, pathRedis)
			}
		}
		paths := map[string]int{}
		for _, s := range m.TurnSamples {
			paths[s.Path]++
			if len(s.CPUMS) == 0 || slices.Min(s.CPUMS) <= 0 || len(s.AllocKB) != len(s.CPUMS) {
				t.Errorf("mode %s turn %d/%d (%s): cpu %v alloc %v", m.Mode, s.Session, s.Turn, s.Path, s.CPUMS, s.AllocKB)
			}
			wantOutcome, wantTier := "hit_local", "local"
			switch {
			case m.Mode == string(ModeFull):
				wantOutcome = "disabled"
			case s.Path == pathRedis:
				wantOutcome, wantTier = "hit_portable", "redis"
			}
			if s.Outcome != wantOutcome || s.Tier != wantTier || (m.Mode != string(ModeFull) && s.Reused == 0) {
				t.Errorf("mode %s turn %d/%d down %s: outcome %s, tier %s, reused %d; want %s from %s", m.Mode, s.Session, s.Turn, s.Path,
					s.Outcome, s.Tier, s.Reused, wantOutcome, wantTier)
			}
		}
		t.Logf("mode %s: turn samples by path %v; turn CPU p50 @1k %s, from L1 %s, from Redis %s; memory %+v", m.Mode, paths,
			ms(m.TurnCPUMSP50.K1), ms(m.TurnCPUL1MSP50.K1), ms(m.TurnCPURedisMSP50.K1), *m.Memory)
		for _, p := range want {
			if paths[p] == 0 {
				t.Errorf("mode %s: no turn down path %s (%v)", m.Mode, p, paths)
			}
		}
		if len(paths) != len(want) {
			t.Errorf("mode %s: paths %v, want %v", m.Mode, paths, want)
		}
		var bounds int
		for _, s := range m.PrepSamples {
			if len(s.BoundCPUMS) > 0 || len(s.BoundMS) > 0 {
				bounds++
			}
		}
		if len(m.PrepSamples) > 0 && bounds == 0 {
			t.Errorf("mode %s: no sampled turn timed its bound", m.Mode)
		}
	}
}
