package sim_test

import (
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stitchllm/stitch/sim"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// TestMetricsGolden checks the /metrics exposition after a fixed request sequence against
// testdata/metrics.golden (regenerate with `go test ./sim -run MetricsGolden -update`). Lines that
// depend on timing (TTFT buckets and sum) are left out.
func TestMetricsGolden(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{ServedModelName: "golden"})
	prompt := tokenPrompt(7, 50)
	complete(t, ts.URL, map[string]any{"prompt": prompt, "max_tokens": 5})
	complete(t, ts.URL, map[string]any{"prompt": prompt, "max_tokens": 5})
	collect(t, streamCompletion(t, ts.URL, map[string]any{"prompt": prompt, "max_tokens": 3, "cache_salt": "x"}))
	post(t, ts.URL+"/v1/completions", `{"model":"nope","prompt":"x"}`)
	post(t, ts.URL+"/v1/completions", `{"prompt":[]}`)

	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "vllm:time_to_first_token_seconds_bucket") || strings.HasPrefix(line, "vllm:time_to_first_token_seconds_sum") {
			continue
		}
		kept = append(kept, line)
	}
	got := strings.Join(kept, "\n")
	path := filepath.Join("testdata", "metrics.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("/metrics differs from %s (-want +got):\n%s", path, diff)
	}
}
