package bench

// MemoryResult is a mode's peak resident memory against the operator guide's sizing formula
// ("Memory cap reached") for the run's settings, without a Go memory limit:
//
//	live heap  L = 50 + C + 1.25 × H + 1.25 × B + N × (1 + 40 × P / 2²⁰) (+ K)
//	RSS ≤ 2 × L + 50
//
// with C = --artifact-cache-mb and H = --artifact-hot-mb (256 each, stitch serve's defaults, with
// artifacts; 0 in full mode, which has neither), B the request bodies in flight (concurrency ×
// the largest body), N the concurrent generations (the workload's concurrency), P the longest
// prompt in tokens (a generation holds its prompt's text, ids and JSON while it runs: about 40
// bytes per token) and K the bench's in-memory checkpoint store (the bytes the clients sent: a
// real server keeps them in bbolt's file, the formula's D). There is no Go memory limit in the
// bench (hence 2 × L). RSS is this process's (the proxy and the load driver; the simulator too
// when it runs in process), peak during the mode's workload, as if the mode ran alone.
type MemoryResult struct {
	RSSPeakMB float64 `json:"rss_peak_mb"`
	BoundMB   float64 `json:"bound_mb"`
	// LiveMB is the formula's L; the rest are its inputs in MiB (N a count).
	LiveMB       float64 `json:"live_mb"`
	CacheMB      float64 `json:"cache_mb"`
	HotMB        float64 `json:"hot_mb"`
	BodiesMB     float64 `json:"bodies_mb"`
	Generations  int     `json:"generations"`
	PromptTokens int     `json:"prompt_tokens"`
	StoreMB      float64 `json:"store_mb"`
	// FileMB is the formula's D: the embedded store's file (bbolt, as stitch serve keeps its
	// responses), whose pages count in RSS once (the soak; 0 where the store is on the heap).
	FileMB float64 `json:"file_mb,omitempty"`
}

// generationBytesPerToken is what a generation in flight holds per prompt token (the operator
// guide's formula).
const generationBytesPerToken = 40

// benchCacheMB and benchHotMB are the proxy's --artifact-cache-mb and --artifact-hot-mb
// (newProxy: stitch serve's defaults).
const (
	benchCacheMB = 256
	benchHotMB   = 256
)

// memoryBound fills the formula for a mode's settings.
func memoryBound(rssPeakMB float64, artifacts bool, concurrency, promptTokens int, maxBodyBytes, storeBytes int64) *MemoryResult {
	m := &MemoryResult{RSSPeakMB: rssPeakMB, Generations: concurrency, PromptTokens: promptTokens,
		BodiesMB: float64(int64(concurrency)*maxBodyBytes) / (1 << 20), StoreMB: float64(storeBytes) / (1 << 20)}
	if artifacts {
		m.CacheMB, m.HotMB = benchCacheMB, benchHotMB
	}
	perGeneration := 1 + float64(generationBytesPerToken*promptTokens)/(1<<20)
	m.LiveMB = 50 + m.CacheMB + 1.25*m.HotMB + 1.25*m.BodiesMB + float64(m.Generations)*perGeneration + m.StoreMB
	m.BoundMB = 2*m.LiveMB + 50
	return m
}
