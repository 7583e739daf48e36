package configs

import "math"

// LiveHeapMB is the operator guide's bound on the live heap ("Memory cap reached"), in MiB, for
// these settings with every bound reached: 50 for the process at rest, the L1 artifact cache
// (reserved), 1.25 × the hot caches (their accounting counts what their arrays keep alive, room
// included; the quarter is the runtime's overhead on many small objects), 1.25 × the request
// bodies in flight (each held with its parsed copy) and 1 MiB per generation. The caches count
// zero when the fast path is off.
func (c *Config) LiveHeapMB() float64 {
	var caches, hot float64
	if !c.Artifacts.Disabled {
		caches, hot = float64(c.Artifacts.CacheMB), float64(c.Artifacts.HotMB)
	}
	return 50 + caches + 1.25*hot + 1.25*float64(c.Server.MaxInflightBodyMB) + float64(c.Server.MaxConcurrentResponses)
}

// DerivedMemoryLimitMB is the Go memory limit serve applies when neither --memory-limit-mb nor a
// cgroup limit gives one: 1.25 × LiveHeapMB, the guide's advice (below it the runtime collects
// almost continuously), so that RSS stays near the formula's bound rather than twice the live
// heap.
func (c *Config) DerivedMemoryLimitMB() int { return int(math.Ceil(1.25 * c.LiveHeapMB())) }
