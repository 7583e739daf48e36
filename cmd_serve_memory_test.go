package main

import (
	"errors"
	"testing"

	"github.com/stitchllm/stitch/configs"
)

// TestMemoryLimitSource: --memory-limit-mb wins, then 90 % of a cgroup limit; with neither the
// limit is derived from the configured caches and bounds (issue 31: a process with no limit
// visible grew to twice its live heap), and it follows them.
func TestMemoryLimitSource(t *testing.T) {
	noCgroup := func() (int64, error) { return 0, errors.New("no cgroup memory limit file") }
	unlimited := func() (int64, error) { return 0, nil }
	cgroup := func() (int64, error) { return 2000 << 20, nil }
	cfg := configs.Default()
	// At the defaults (C = H = B = 256 MiB, N = 512): L = 50 + 256 + 320 + 320 + 512 = 1,458 MiB.
	if got := cfg.LiveHeapMB(); got != 1458 {
		t.Errorf("live heap at the defaults = %v MiB, want 1458 (the operator guide's formula)", got)
	}
	for _, c := range []struct {
		name      string
		flagMB    int
		cgroup    func() (int64, error)
		want      int64
		wantFlag  bool
		artifacts bool
	}{
		{"flag", 1024, cgroup, 1024 << 20, true, true},
		{"cgroup", 0, cgroup, 2000 << 20 / 10 * 9, false, true},
		{"derived, no cgroup file", 0, noCgroup, 1823 << 20, false, true},
		{"derived, cgroup unlimited", 0, unlimited, 1823 << 20, false, true},
		// Without the fast path the caches count nothing: 1.25 × (50 + 320 + 512) = 1,102.5.
		{"derived, artifacts off", 0, unlimited, 1103 << 20, false, false},
	} {
		cfg := configs.Default()
		cfg.Server.MemoryLimitMB, cfg.Artifacts.Disabled = c.flagMB, !c.artifacts
		got, source := memoryLimit(cfg, c.cgroup)
		if got != c.want || (source == "memory-limit-mb") != c.wantFlag {
			t.Errorf("%s: limit %d MiB (%s), want %d MiB", c.name, got>>20, source, c.want>>20)
		}
	}
}
