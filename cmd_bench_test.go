package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestBenchHelp(t *testing.T) {
	var out bytes.Buffer
	err := runBench(context.Background(), cliEnv{stdout: &out, stderr: io.Discard}, []string{"--help"})
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("runBench --help = %v", err)
	}
	for _, f := range []string{"-quick", "-out", "-target", "-modes", "-seed", "-drift", "-sessions", "-turns", "-concurrency", "-sim-in-process"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("--help lacks %q", f)
		}
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--modes", "full,fast"}, {"--nope"}, {"extra"},
		{"--tool-call-parser", "llama3_json", "--reasoning-parser", "qwen3"}, {"--tool-call-parser", "nope"},
		{"--fleet", "2", "--fleet-policies", "precise_prefix,nope"}} {
		err := runBench(context.Background(), cliEnv{stdout: io.Discard, stderr: io.Discard}, args)
		if !errors.Is(err, errUsage) {
			t.Errorf("runBench %v = %v, want errUsage", args, err)
		}
	}
}

// runTinyBench runs `stitch bench --quick` with the simulator in process, no streaming part, short
// tool outputs and no simulated prefill time, plus args, and returns its table and bench.json.
func runTinyBench(t *testing.T, args ...string) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	var out bytes.Buffer
	err := runBench(context.Background(), cliEnv{stdout: &out, stderr: io.Discard}, append([]string{
		"--quick", "--sim-in-process", "--no-streaming", "--tool-output-tokens", "300",
		"--ttft-base", "0", "--prefill-per-token", "0", "--out", dir}, args...))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), raw
}

// TestBenchTiny runs `stitch bench` on 2 sessions × 3 turns with the simulator in process and
// checks the table and bench.json.
func TestBenchTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("drives three proxies and simulators")
	}
	out, raw := runTinyBench(t, "--sessions", "2", "--turns", "3")
	if !strings.Contains(out, "prefix-cache hit ratio") || !strings.Contains(out, "canonical hit ratio == full") {
		t.Errorf("table lacks the hit ratio rows:\n%s", out)
	}
	for _, want := range []string{"turn CPU ms p50 @1k", "turn CPU ms p50 @1k, from L1", "prep bound CPU ms p50 @1k", "memory bound MiB (formula)",
		"memory canonical: peak RSS"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	var doc struct {
		Workload struct {
			Sessions, Turns int
		} `json:"workload"`
		Modes []struct {
			Mode         string              `json:"mode"`
			HitRatio     float64             `json:"hit_ratio"`
			TurnCPUMSP50 map[string]*float64 `json:"turn_cpu_ms_p50"`
			Memory       *struct {
				RSSPeakMB float64 `json:"rss_peak_mb"`
				BoundMB   float64 `json:"bound_mb"`
			} `json:"memory"`
		} `json:"modes"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Workload.Sessions != 2 || doc.Workload.Turns != 3 || len(doc.Modes) != 3 {
		t.Fatalf("bench.json workload %+v with %d modes", doc.Workload, len(doc.Modes))
	}
	if doc.Modes[0].Mode != "full" || doc.Modes[1].Mode != "canonical" || doc.Modes[1].HitRatio != doc.Modes[0].HitRatio {
		t.Errorf("modes = %+v: want canonical's hit ratio equal to full's", doc.Modes)
	}
	for _, m := range doc.Modes {
		if m.TurnCPUMSP50["1k"] == nil || *m.TurnCPUMSP50["1k"] <= 0 || m.Memory == nil || m.Memory.BoundMB <= 0 {
			t.Errorf("mode %s: turn_cpu_ms_p50 %v, memory %+v", m.Mode, m.TurnCPUMSP50, m.Memory)
		}
	}
}

// TestBenchGPTOSSTiny: stitch bench serves a gpt-oss directory through Harmony (--tool-call-parser
// openai): continuations are artifact hits in both artifact modes, canonical's hit ratio equals
// the full render's, and exact's is at least canonical's.
func TestBenchGPTOSSTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("drives three proxies and simulators")
	}
	var out bytes.Buffer
	err := runBench(context.Background(), cliEnv{stdout: &out, stderr: io.Discard}, []string{
		"--quick", "--sessions", "1", "--turns", "6", "--tool-output-tokens", "300", "--prep-reps", "1",
		"--ttft-base", "0", "--prefill-per-token", "0", "--model-dir", filepath.Join("testdata", "models", "gptoss"), "--tool-call-parser", "openai"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"canonical hit ratio == full", "(ok)", "hit_local=5 new=1  hit_local=5 new=1", "disabled=5 new=1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if !regexp.MustCompile(`exact hit ratio ≥ canonical: [0-9.]+ vs [0-9.]+ \(ok\)`).MatchString(out.String()) {
		t.Errorf("exact's hit ratio is below canonical's:\n%s", out.String())
	}
}

// TestBenchFamilyTiny: stitch bench serves a profile other than Qwen3 (Llama 3.2 with vLLM's
// Llama 3.1 tool template and llama3_json), the simulator answering in that format: the tool
// rounds go through (prompts grow by the tool outputs), continuations are artifact hits, and
// canonical's hit ratio equals the full render's.
func TestBenchFamilyTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("drives three proxies and simulators")
	}
	_, raw := runTinyBench(t, "--sessions", "1", "--turns", "3", "--prep-reps", "1",
		"--model-dir", filepath.Join("testdata", "models", "llama3_2"), "--chat-template", filepath.Join("testdata", "render", "llama3", "llama-3.1.jinja"),
		"--tool-call-parser", "llama3_json")
	var doc struct {
		Modes []struct {
			Mode            string         `json:"mode"`
			HitRatio        float64        `json:"hit_ratio"`
			CachedTokens    uint64         `json:"cached_tokens"`
			MaxPromptTokens int            `json:"max_prompt_tokens"`
			Outcomes        map[string]int `json:"outcomes"`
		} `json:"modes"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Modes) != 3 {
		t.Fatalf("bench.json has %d modes, want 3", len(doc.Modes))
	}
	full, canon, exact := doc.Modes[0], doc.Modes[1], doc.Modes[2]
	if full.MaxPromptTokens < 600 {
		t.Errorf("longest prompt %d tokens: the simulator's llama3_json calls did not come back as tool rounds", full.MaxPromptTokens)
	}
	if canon.HitRatio != full.HitRatio || canon.CachedTokens != full.CachedTokens {
		t.Errorf("canonical hit ratio %v (%d cached) != full %v (%d cached)", canon.HitRatio, canon.CachedTokens, full.HitRatio, full.CachedTokens)
	}
	if exact.HitRatio < canon.HitRatio {
		t.Errorf("exact hit ratio %v < canonical %v", exact.HitRatio, canon.HitRatio)
	}
	if canon.Outcomes["hit_local"] != 2 {
		t.Errorf("canonical outcomes %v: want 2 hit_local", canon.Outcomes)
	}
}

// TestSoakTiny runs `stitch bench --soak 2s --soak-workers 2 --soak-only` through the tiny runs'
// path and checks the soak's shape only (no timing): conversations ran, RSS and the bound are
// reported, and the report has the soak's check line.
func TestSoakTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a proxy and a simulator for two seconds")
	}
	out, raw := runTinyBench(t, "--soak", "2s", "--soak-workers", "2", "--soak-only")
	if !strings.Contains(out, "soak rss ≤ bound: ") {
		t.Errorf("report lacks the soak's check line:\n%s", out)
	}
	var doc struct {
		Soak *struct {
			DurationS     float64 `json:"duration_s"`
			Workers       int     `json:"workers"`
			Conversations int     `json:"conversations"`
			Turns         int     `json:"turns"`
			FailedTurns   int     `json:"failed_turns"`
			RSSPeakMB     float64 `json:"rss_peak_mb"`
			BoundMB       float64 `json:"bound_mb"`
			LiveMB        float64 `json:"live_mb"`
			HotEntries    *int    `json:"hot_entries"`
			OK            *bool   `json:"ok"`
		} `json:"soak"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Soak
	if s == nil {
		t.Fatalf("bench.json has no soak:\n%s", raw)
	}
	if s.Workers != 2 || s.Conversations == 0 || s.Turns < 4*s.Conversations || s.FailedTurns != 0 ||
		s.RSSPeakMB <= 0 || s.BoundMB <= 0 || s.LiveMB <= 0 || s.HotEntries == nil || s.OK == nil || s.DurationS <= 0 {
		t.Errorf("soak = %+v", *s)
	}
}
