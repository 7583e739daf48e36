package bench

import (
	"context"
	"encoding/json"
	"testing"
)

// TestRunFleetSmall runs every policy in both modes on three replicas with short conversations:
// the decisions are llm-d-kv-cache's, fed by the replicas' KV events, so the exact-routing
// baseline (precise_prefix, full) must be matched by canonical and by the sidecar topology
// resolving through /v1/responses/render, and load-only routing must lose hits.
func TestRunFleetSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts replicas, stitch proxies and Redis per policy")
	}
	m := loadDemo(t)
	w := FleetWorkload()
	w.Sessions, w.Turns, w.ToolOutputTokens = 4, 4, 300
	w.TTFTBase, w.PrefillPerToken, w.DecodePerToken = 0, 0, 0
	res, err := RunFleet(context.Background(), FleetOptions{Replicas: 3, Workload: w, Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if res.Replicas != 3 || len(res.Policies) != len(FleetPolicies)*2 {
		t.Fatalf("fleet result: %d replicas, %d rows", res.Replicas, len(res.Policies))
	}
	rows := map[string]FleetPolicyResult{}
	for _, p := range res.Policies {
		rows[p.Name+"/"+p.Mode] = p
		if p.Requests != w.Sessions*w.Turns || p.ScoreErrors != 0 || p.SplitWaves != 0 {
			t.Errorf("%s/%s: %d requests (want %d), %d score errors, %d split waves", p.Name, p.Mode, p.Requests, w.Sessions*w.Turns, p.ScoreErrors, p.SplitWaves)
		}
		if p.PromptTokens == 0 || p.BytesToUpstream == 0 {
			t.Errorf("%s/%s: nothing reached the replicas: %+v", p.Name, p.Mode, p)
		}
		t.Logf("%-16s %-9s hit %.6f (%d/%d) per replica %v", p.Name, p.Mode, p.HitRatio, p.CachedTokens, p.PromptTokens, p.RequestsPerReplica)
	}
	baseline := rows[PolicyPrecisePrefix+"/full"]
	for _, k := range []string{PolicyPrecisePrefix + "/canonical", PolicySidecarRender + "/full", PolicySidecarRender + "/canonical"} {
		if got := rows[k]; got.CachedTokens != baseline.CachedTokens || got.PromptTokens != baseline.PromptTokens {
			t.Errorf("%s: %d of %d prompt tokens cached, the exact-routing baseline (precise_prefix/full) %d of %d",
				k, got.CachedTokens, got.PromptTokens, baseline.CachedTokens, baseline.PromptTokens)
		}
	}
	for _, mode := range []string{"full", "canonical"} {
		if rr := rows[PolicyRoundRobin+"/"+mode]; rr.HitRatio >= baseline.HitRatio {
			t.Errorf("round_robin/%s hit ratio %.6f, not below precise prefix %.6f", mode, rr.HitRatio, baseline.HitRatio)
		}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Replicas int                          `json:"replicas"`
		Policies []map[string]json.RawMessage `json:"policies"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "mode", "hit_ratio", "ttft_ms_p50", "ttft_ms_p99", "bytes_to_upstream", "router_cpu_ms_per_request"} {
		if _, ok := doc.Policies[0][k]; !ok {
			t.Errorf("bench.json fleet.policies lacks %q", k)
		}
	}
}
