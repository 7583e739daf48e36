package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stitchllm/stitch/internal/synthmodel"
)

// TestBenchFleetBlockKeysFamilies is issue 30's block-key identity, per family profile: a
// multi-turn agent conversation (tool calls, tool outputs, answers, follow-ups) runs through
// stitch in full-render and in canonical mode behind the fleet router, which computes llm-d
// block keys (llm-d-kv-cache's token processor, the replicas' block size and hash seed) from
// every prompt it routes, cache_salt folded in as llm-d keys it. The digests of all keys, in
// decision order, must be equal: the router cannot tell a canonical continuation from a full
// render, so exact routing keeps its hit ratio. (Tenants' salts separating keys: fleet's
// TestPoolTracksSimulatedReplicas.)
func TestBenchFleetBlockKeysFamilies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a two-replica fleet per family")
	}
	models := filepath.Join("testdata", "models")
	templates := filepath.Join("testdata", "render")
	tests := []struct {
		name, dir, standIn, template string
		args                         []string
	}{
		{name: "qwen3"},
		{name: "hermes", dir: "qwen2_5", args: []string{"--tool-call-parser", "hermes"}},
		{name: "qwen3_coder", dir: "qwen3", template: "qwen3/qwen3-coder.jinja", args: []string{"--tool-call-parser", "qwen3_coder"}},
		{name: "llama3_json", dir: "llama3_2", template: "llama3/llama-3.1.jinja", args: []string{"--tool-call-parser", "llama3_json"}},
		{name: "pythonic", dir: "llama3_2", args: []string{"--tool-call-parser", "pythonic"}},
		// Nemo's template refuses a user message right after a tool result (roles must
		// alternate), so its sessions take no nudges.
		{name: "mistral", dir: "mistral_nemo", args: []string{"--tool-call-parser", "mistral", "--follow-up-rate", "0"}},
		{name: "deepseek_v3", dir: "deepseek_v3", template: "deepseek_v3/vllm-tool-deepseekv3.jinja", args: []string{"--tool-call-parser", "deepseek_v3"}},
		{name: "deepseek_v31", dir: "deepseek_v3", template: "deepseek_v3/vllm-tool-deepseekv31.jinja", args: []string{"--tool-call-parser", "deepseek_v31"}},
		{name: "kimi_k2", standIn: "kimi_k2/kimi-k2", args: []string{"--tool-call-parser", "kimi_k2", "--reasoning-parser", "kimi_k2"}},
		{name: "glm45", standIn: "glm4/glm-4.6", args: []string{"--tool-call-parser", "glm45", "--reasoning-parser", "glm45"}},
		{name: "gpt-oss", dir: "gptoss", args: []string{"--tool-call-parser", "openai"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--fleet", "2", "--fleet-only", "--fleet-policies", "precise_prefix,sidecar_render",
				"--modes", "full,canonical", "--sessions", "2", "--turns", "4"}, tt.args...)
			switch {
			case tt.standIn != "":
				dir := t.TempDir()
				if err := synthmodel.WriteFamily(dir, filepath.Join(models, "qwen3", "tokenizer.json"), templates, tt.standIn); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--model-dir", dir)
			case tt.dir != "":
				args = append(args, "--model-dir", filepath.Join(models, tt.dir))
			}
			if tt.template != "" {
				args = append(args, "--chat-template", filepath.Join(templates, tt.template))
			}
			_, raw := runTinyBench(t, args...)
			var doc struct {
				Fleet struct {
					Policies []struct {
						Name           string  `json:"name"`
						Mode           string  `json:"mode"`
						HitRatio       float64 `json:"hit_ratio"`
						BlockKeys      int     `json:"block_keys"`
						BlockKeyDigest string  `json:"block_key_digest"`
						Requests       int     `json:"requests"`
					} `json:"policies"`
				} `json:"fleet"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Fleet.Policies) != 4 {
				t.Fatalf("%d fleet rows, want 4", len(doc.Fleet.Policies))
			}
			want := doc.Fleet.Policies[0] // precise_prefix, full: the exact-routing baseline
			if want.BlockKeys == 0 || want.Requests != 8 {
				t.Fatalf("baseline scored %d block keys over %d requests", want.BlockKeys, want.Requests)
			}
			for _, p := range doc.Fleet.Policies[1:] {
				if p.BlockKeyDigest != want.BlockKeyDigest || p.BlockKeys != want.BlockKeys || p.HitRatio != want.HitRatio {
					t.Errorf("%s/%s: %d keys digest %.16s hit %.6f; %s/%s: %d keys digest %.16s hit %.6f", p.Name, p.Mode, p.BlockKeys, p.BlockKeyDigest, p.HitRatio,
						want.Name, want.Mode, want.BlockKeys, want.BlockKeyDigest, want.HitRatio)
				}
			}
		})
	}
}
