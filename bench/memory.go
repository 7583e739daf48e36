package bench

// MemoryResult is a mode's peak resident memory against the operator guide's sizing formula
// ("Memory cap reached") for the run's settings, without a Go memory limit:
//
//	live heap  L = 50 + C + 1.25 × H + 1.25 × B + 1 × N (+ K)
//	RSS ≤ 2 × L + 50
//
// with C = --artifact-cache-mb and H = --artifact-hot-mb (256 each, stitch serve's defaults, with
// artifacts; 0 in full mode, which has neither), B the request bodies in flight (concurrency ×
// the largest body), N the concurrent generations (the workload's concurrency) and K the bench's
// in-memory checkpoint store (the bytes the clients sent: a real server keeps them in bbolt's
// file, the formula's D). RSS is this process's (the proxy and the load driver; the simulator
// too when it runs in process), peak during the mode's workload, as if the mode ran alone.
type MemoryResult struct {
	RSSPeakMB float64 `json:"rss_peak_mb"`
	BoundMB   float64 `json:"bound_mb"`
	// LiveMB is the formula's L; the rest are its inputs in MiB (N a count).
	LiveMB      float64 `json:"live_mb"`
	CacheMB     float64 `json:"cache_mb"`
	HotMB       float64 `json:"hot_mb"`
	BodiesMB    float64 `json:"bodies_mb"`
	Generations int     `json:"generations"`
	StoreMB     float64 `json:"store_mb"`
}

// benchCacheMB and benchHotMB are the proxy's --artifact-cache-mb and --artifact-hot-mb
// (newProxy: stitch serve's defaults).
const (
	benchCacheMB = 256
	benchHotMB   = 256
)

// memoryBound fills the formula for a mode's settings.
func memoryBound(rssPeakMB float64, artifacts bool, concurrency int, maxBodyBytes, storeBytes int64) *MemoryResult {
	m := &MemoryResult{RSSPeakMB: rssPeakMB, Generations: concurrency,
		BodiesMB: float64(int64(concurrency)*maxBodyBytes) / (1 << 20), StoreMB: float64(storeBytes) / (1 << 20)}
	if artifacts {
		m.CacheMB, m.HotMB = benchCacheMB, benchHotMB
	}
	m.LiveMB = 50 + m.CacheMB + 1.25*m.HotMB + 1.25*m.BodiesMB + float64(m.Generations) + m.StoreMB
	m.BoundMB = 2*m.LiveMB + 50
	return m
}
