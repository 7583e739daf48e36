package main

import (
	"errors"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/stitchllm/stitch/configs"
)

// applyMemoryLimit sets the Go runtime's soft memory limit: --memory-limit-mb, else 90 % of the
// cgroup's limit. GOMEMLIMIT, when set, was applied by the runtime and wins. Without a limit the
// heap may grow to twice its live size before a collection (GOGC=100), which is what made RSS
// climb far past the caches.
func applyMemoryLimit(logger *slog.Logger, cfg *configs.Config) {
	if os.Getenv("GOMEMLIMIT") != "" {
		logger.Info("memory limit from GOMEMLIMIT", "bytes", debug.SetMemoryLimit(-1))
		return
	}
	limit, source := memoryLimit(cfg, cgroupMemoryLimit)
	debug.SetMemoryLimit(limit)
	logger.Info("Go memory limit set", "mib", limit>>20, "source", source)
}

// memoryLimit returns the Go memory limit in bytes and where it comes from: --memory-limit-mb;
// else 90 % of the cgroup's limit; else, with no limit visible to the process, 1.25 × the live
// heap the configured caches and bounds allow (configs.Config.DerivedMemoryLimitMB), so that a
// process without a container limit does not grow to twice its live heap between collections.
func memoryLimit(cfg *configs.Config, cgroup func() (int64, error)) (int64, string) {
	if mb := cfg.Server.MemoryLimitMB; mb > 0 {
		return int64(mb) << 20, "memory-limit-mb"
	}
	if cg, err := cgroup(); err == nil && cg > 0 {
		return cg / 10 * 9, "90% of the cgroup memory limit"
	}
	return int64(cfg.DerivedMemoryLimitMB()) << 20, "derived from the caches and bounds (1.25 × the live heap formula; set --memory-limit-mb to choose)"
}

// cgroupMemoryLimit reads cgroup v2's memory.max (v1's limit_in_bytes as a fallback); 0 when unlimited.
func cgroupMemoryLimit() (int64, error) {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(data))
		if s == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, err
		}
		if n >= 1<<60 { // v1's "unlimited"
			return 0, nil
		}
		return n, nil
	}
	return 0, errors.New("no cgroup memory limit file")
}
