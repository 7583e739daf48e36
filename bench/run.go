package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
)

// Options configure a [Run].
type Options struct {
	// Workload is driven once per mode. Required (start from DefaultWorkload).
	Workload Workload
	// Modes to compare, in order. Default: full, canonical, exact.
	Modes []Mode
	// Transports to run each mode over (issue 19), in order. Default: HTTP only. A gRPC run's
	// column is named "<mode>/grpc"; its preparation is not timed again (it does not depend on
	// the transport). With both, Result.BodyDecode compares the upstream's decode of each body.
	Transports []Transport
	// DecodeReps is how many times each captured body is decoded in Python. Default 20.
	DecodeReps int
	// Model is the served model (tokenizer and chat template) for the proxy and an in-process
	// simulator. Required unless Target is set.
	Model *render.Renderer
	// Harmony, when set, serves Model as gpt-oss (family openai + openai_gptoss, prompts rendered
	// with Harmony, as stitch serve does for a gpt_oss model). The workload should then send no
	// reasoning.effort "none" (ReasoningOffEvery 0): gpt-oss knows low, medium and high.
	Harmony *prepare.Harmony
	// Family names the parsers Model is served with (vLLM's --tool-call-parser and
	// --reasoning-parser, as stitch serve takes them). Zero: Qwen3 (hermes + qwen3). Ignored
	// with Harmony. The simulator must answer in the same family's format (ProcessSim.Family,
	// InProcessSim.Family).
	Family family.Names
	// Sim starts a fresh simulator per mode. Default: InProcessSim{Model}.
	Sim SimLauncher
	// Target, when set, is the base URL of a running stitch serve to drive instead of in-process
	// servers: one mode, "target", with client-side numbers only (hit ratio from response usage;
	// no preparation timing, CPU or memory).
	Target string
	// AuditRate is the artifact preparer's background audit rate during the workload (stitch
	// serve's default is 0.01). The timing pass never audits.
	AuditRate float64
	// PrepReps is how many times each sampled turn's preparation is timed. Default 3.
	PrepReps int
	// Logger receives the proxy's logs. Default: discard (the server logs a line per response).
	Logger *slog.Logger
	// Progress receives one line per phase; nil discards.
	Progress io.Writer
	// ProfileDir, when set, receives a CPU profile per mode of its 100k-token turns sent again
	// down the workload's path (turn-<mode>.pprof), after the turn pass.
	ProfileDir string
}

// Result is a whole run: bench.json.
type Result struct {
	Workload  Workload         `json:"workload"`
	Machine   Machine          `json:"machine"`
	Modes     []ModeResult     `json:"modes"`
	Streaming *StreamingResult `json:"streaming,omitempty"`
	// BodyDecode is the upstream's body decode cost, HTTP JSON vs gRPC protobuf (gRPC runs only).
	BodyDecode *BodyDecodeResult `json:"body_decode,omitempty"`
	// Fleet is the fleet comparison (stitch bench --fleet N; issue 30).
	Fleet *FleetResult `json:"fleet,omitempty"`
	// Soak is the memory soak's peak RSS against the operator guide's formula (stitch bench
	// --soak; issue 31).
	Soak *SoakResult `json:"soak,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	// CPUModel is /proc/cpuinfo's model name, when known.
	CPUModel string `json:"cpu_model,omitempty"`
	// LoadAvg is /proc/loadavg at the start of the run (other work on a shared machine).
	LoadAvg string `json:"load_avg,omitempty"`
}

// BucketMS holds a per-context-bucket statistic in milliseconds; null where no sampled turn fell in
// the bucket.
type BucketMS struct {
	K1   *float64 `json:"1k"`
	K10  *float64 `json:"10k"`
	K100 *float64 `json:"100k"`
}

func (b *BucketMS) set(bucket string, v float64) {
	switch bucket {
	case "1k":
		b.K1 = &v
	case "10k":
		b.K10 = &v
	case "100k":
		b.K100 = &v
	}
}

// BucketRatio is a per-context-bucket ratio (no unit), in BucketMS's shape; null where either
// side has no sample in the bucket.
type BucketRatio BucketMS

// ratioOf is full's statistic over this mode's, bucket by bucket.
func ratioOf(full, mode BucketMS) BucketRatio {
	var r BucketMS
	for _, b := range buckets {
		if f, m := full.get(b.name), mode.get(b.name); f != nil && m != nil && *m > 0 {
			r.set(b.name, *f / *m)
		}
	}
	return BucketRatio(r)
}

func (b BucketRatio) get(bucket string) *float64 { return BucketMS(b).get(bucket) }

func (b BucketMS) get(bucket string) *float64 {
	switch bucket {
	case "1k":
		return b.K1
	case "10k":
		return b.K10
	}
	return b.K100
}

// ModeResult is one mode's numbers.
type ModeResult struct {
	Mode string `json:"mode"`
	// Transport is how the proxy reached the simulator: "http" or "grpc".
	Transport string `json:"transport"`
	Turns     int    `json:"turns"`
	// HitRatio is the simulator's prefix-cache hits / queries, in tokens, over the whole mode.
	HitRatio float64 `json:"hit_ratio"`
	// PromptTokens and CachedTokens are those counters; PromptTokensRecomputed = PromptTokens −
	// CachedTokens is the prefill the GPU would redo.
	PromptTokens           uint64 `json:"prompt_tokens"`
	CachedTokens           uint64 `json:"cached_tokens"`
	PromptTokensRecomputed uint64 `json:"prompt_tokens_recomputed"`
	// PromptTokensTokenized is how many prompt tokens the proxy tokenized (prompt length minus
	// ids reused from an artifact), summed over turns.
	PromptTokensTokenized int64 `json:"prompt_tokens_tokenized"`
	// PrepMSP50/P99 are the continuation preparation times per context bucket, warm (steady
	// state: the repetitions after the first of the timing pass; see PrepSamples).
	PrepMSP50 BucketMS `json:"prep_ms_p50"`
	PrepMSP99 BucketMS `json:"prep_ms_p99"`
	// PrepCPUMSP50/P99 are the same calls' thread CPU times (Linux; null elsewhere): the work,
	// without waiting for a core on a shared machine.
	PrepCPUMSP50 BucketMS `json:"prep_cpu_ms_p50"`
	PrepCPUMSP99 BucketMS `json:"prep_cpu_ms_p99"`
	// PrepColdMSP50 and PrepColdCPUMSP50 are the first, cold repetitions' medians: the CPU caches
	// held the other modes' work, as they hold other conversations' on a busy server.
	PrepColdMSP50    BucketMS `json:"prep_cold_ms_p50"`
	PrepColdCPUMSP50 BucketMS `json:"prep_cold_cpu_ms_p50"`
	// The ratios versus the full mode of the same run (issue 20): full's p50 over this mode's,
	// per bucket, warm and cold, wall and thread CPU; ≥ 1 where this mode prepares faster.
	// Null where full was not run or either side has no sample in the bucket (a gRPC column,
	// whose preparation is not timed again, has none).
	PrepRatioVsFull        BucketRatio `json:"prep_ratio_vs_full"`
	PrepCPURatioVsFull     BucketRatio `json:"prep_cpu_ratio_vs_full"`
	PrepColdRatioVsFull    BucketRatio `json:"prep_cold_ratio_vs_full"`
	PrepColdCPURatioVsFull BucketRatio `json:"prep_cold_cpu_ratio_vs_full"`
	// TurnCPUMSP50 is the whole turn's process CPU time per context bucket (parse, store reads,
	// preparation, upstream request, stream handling, persistence: every thread of this
	// process), the sampled continuations sent again one at a time down the workload's path
	// (the hot entry; a full render in full mode). TurnCPUL1MSP50 and TurnCPURedisMSP50 are the
	// truly cold paths: the hot entry dropped, the artifact read back from L1 and extended; its
	// L1 links dropped too, read from Redis (null without artifacts, or without Redis).
	// TurnAllocKBP50 is the heap a hot-path turn allocates, in KiB (what the collector is left).
	// TurnCPURatioVsFull is full's TurnCPUMSP50 over this mode's (≥ 2 is issue 32's bar).
	TurnCPUMSP50       BucketMS    `json:"turn_cpu_ms_p50"`
	TurnCPUL1MSP50     BucketMS    `json:"turn_cpu_l1_ms_p50"`
	TurnCPURedisMSP50  BucketMS    `json:"turn_cpu_redis_ms_p50"`
	TurnAllocKBP50     BucketMS    `json:"turn_alloc_kb_p50"`
	TurnCPURatioVsFull BucketRatio `json:"turn_cpu_ratio_vs_full"`
	// PrepBoundMSP50 and PrepBoundCPUMSP50 are the physical bound of a continuation's
	// preparation: tokenizing only the new turn's text with the same tokenizer (warm, wall and
	// thread CPU), for the same sampled turns as PrepMSP50.
	PrepBoundMSP50    BucketMS `json:"prep_bound_ms_p50"`
	PrepBoundCPUMSP50 BucketMS `json:"prep_bound_cpu_ms_p50"`
	// Memory is the mode's peak RSS against the operator guide's bound for its settings.
	Memory *MemoryResult `json:"memory,omitempty"`
	// TTFTMSP50/P99 are the client's times to first token (request sent → first delta event).
	TTFTMSP50 float64 `json:"ttft_ms_p50"`
	TTFTMSP99 float64 `json:"ttft_ms_p99"`
	// CPUSPerTurn is the proxy process's CPU seconds per turn (driver included; the simulator
	// excluded when it runs as a child process).
	CPUSPerTurn float64 `json:"cpu_s_per_turn"`
	// SimCPUS is the child simulator's CPU seconds (0 in process).
	SimCPUS float64 `json:"sim_cpu_s"`
	// BytesToUpstream are the completions request bodies the proxy sent; BytesFromClients the
	// Responses request bodies it received.
	BytesToUpstream  int64 `json:"bytes_to_upstream"`
	BytesFromClients int64 `json:"bytes_from_clients"`
	// PeakRSSMB is the process's peak resident memory during the mode, in MiB.
	PeakRSSMB float64 `json:"peak_rss_mb"`
	// WallS is the workload's wall time in seconds (timing pass excluded).
	WallS float64 `json:"wall_s"`
	// MaxPromptTokens is the longest prompt of the mode.
	MaxPromptTokens int `json:"max_prompt_tokens"`
	// Outcomes counts the artifact resolutions of the workload's turns.
	Outcomes map[string]int `json:"outcomes"`
	// PrepSamples are the timed turns.
	PrepSamples []PrepTiming `json:"prep_samples"`
	// Storage is what the artifact tiers hold per conversation after the workload (null in full
	// mode).
	Storage *StorageResult `json:"storage,omitempty"`
	// TurnSamples are the turns of the turn pass.
	TurnSamples []TurnTiming `json:"turn_samples"`
}

// Run drives the workload once per mode and returns the numbers.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.Workload.validate(); err != nil {
		return nil, err
	}
	if opts.Target == "" && opts.Model == nil {
		return nil, fmt.Errorf("%w: a model is required without a target", ErrBadOptions)
	}
	if len(opts.Modes) == 0 {
		opts.Modes = []Mode{ModeFull, ModeCanonical, ModeExact}
	}
	if opts.Sim == nil {
		opts.Sim = InProcessSim{Model: opts.Model, Family: opts.Family}
	}
	if opts.PrepReps <= 0 {
		opts.PrepReps = 3
	}
	if len(opts.Transports) == 0 {
		opts.Transports = []Transport{TransportHTTP}
	}
	if opts.DecodeReps <= 0 {
		opts.DecodeReps = 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	res := &Result{Workload: opts.Workload, Machine: machine()}
	if opts.Target != "" {
		mr, err := runTarget(ctx, opts)
		if err != nil {
			return nil, err
		}
		res.Modes = append(res.Modes, *mr)
		return res, nil
	}
	// Each mode's proxy stays open after its workload (its artifacts and hot entries still
	// cached) so that the preparation of every mode is timed in one interleaved pass: the same
	// turn in each mode within milliseconds, whatever the machine does meanwhile.
	runs := make([]*modeRun, 0, len(opts.Modes))
	defer func() {
		for _, r := range runs {
			_ = r.close()
		}
	}()
	rs, err := startRedis(ctx)
	if err != nil {
		return nil, err
	}
	defer rs.close()
	if rs == nil {
		fmt.Fprintln(opts.Progress, "redis-server not on PATH: no portable tier, storage.redis_bytes_per_conversation is null")
	}
	base := rssMB()
	var timed []*modeRun
	pairs := map[string]*bodyPair{}
	for _, m := range opts.Modes {
		for i, tr := range opts.Transports {
			r, err := runMode(ctx, opts, m, tr, base, rs)
			if err != nil {
				return nil, fmt.Errorf("mode %s: %w", modeLabel(m, tr), err)
			}
			runs = append(runs, r)
			if i == 0 {
				timed = append(timed, r)
			}
			if g := r.proxy.up.grpc; g != nil {
				for b, p := range g.pairs() {
					if pairs[b] == nil {
						pairs[b] = p
					}
				}
			}
		}
	}
	fmt.Fprintf(opts.Progress, "timing preparation of %d modes, interleaved…\n", len(timed))
	if err := timeInterleaved(ctx, timed, opts.PrepReps); err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Progress, "timing whole turns of %d modes, serially, interleaved…\n", len(timed))
	if err := timeTurns(ctx, timed, opts); err != nil {
		return nil, err
	}
	for _, r := range runs {
		if err := r.close(); err != nil {
			return nil, fmt.Errorf("mode %s: %w", r.result.Mode, err)
		}
		fillPrep(r.result)
		fillTurns(r.result)
		res.Modes = append(res.Modes, *r.result)
	}
	res.fillRatios()
	if len(pairs) > 0 {
		fmt.Fprintln(opts.Progress, "timing the upstream's decode of the request bodies (Python)…")
		d, err := measureBodyDecode(ctx, pairs, opts.DecodeReps)
		if err != nil {
			return nil, err
		}
		res.BodyDecode = d
	}
	return res, nil
}

// modeRun is one mode's finished workload: its results so far and its proxy, kept open for the
// timing pass.
type modeRun struct {
	result *ModeResult
	proxy  *proxy
	// sim is the mode's simulator, kept up for the turn pass; bodies the workload's requests.
	sim         SimInstance
	bodies      map[turnKey][]byte
	concurrency int
	closed      bool
}

// close stops the mode's proxy and simulator; the simulator's CPU is read now where it was not
// read after the workload.
func (r *modeRun) close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.proxy.close()
	if r.sim == nil {
		return nil
	}
	err := r.sim.Close()
	if r.result.SimCPUS == 0 {
		r.result.SimCPUS = r.sim.CPUSeconds()
	}
	r.sim = nil
	if err != nil {
		return fmt.Errorf("stop simulator: %w", err)
	}
	return nil
}

// runMode runs the workload against a fresh simulator and a fresh proxy in mode m. Peak RSS is
// reported as if the mode ran alone: the earlier modes' proxies, still open, are subtracted
// (base is the process's RSS before any mode).
func runMode(ctx context.Context, opts Options, m Mode, tr Transport, base float64, rs *redisServer) (*modeRun, error) {
	runtime.GC()
	debug.FreeOSMemory()
	start0 := rssMB()
	resetPeakRSS()
	simi, err := opts.Sim.Start(ctx, opts.Workload)
	if err != nil {
		return nil, err
	}
	simKept := false
	defer func() {
		if !simKept {
			_ = simi.Close()
		}
	}()
	po := proxyOptions{mode: m, model: opts.Model, harmony: opts.Harmony, family: opts.Family, upstream: simi.URL(), transport: tr, w: opts.Workload,
		auditRate: opts.AuditRate, logger: opts.Logger}
	if rs != nil {
		po.redis = rs.client
	}
	if g, ok := simi.(grpcAddresser); ok {
		po.grpcAddr = g.GRPCAddr()
	}
	p, err := newProxy(po)
	if err != nil {
		return nil, err
	}
	kept := false
	defer func() {
		if !kept {
			p.close()
		}
	}()

	d := newDriver(opts.Workload, p.url)
	defer d.close()
	cpu0, start := processCPU(), time.Now()
	turns, err := d.run(ctx)
	if err != nil {
		return nil, err
	}
	wall, cpu := time.Since(start), processCPU()-cpu0
	peak := peakRSSMB()
	if start0 > 0 && base > 0 {
		peak = peak - start0 + base
	}
	st, err := simi.Stats(ctx)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Progress, "%-14s %d turns in %.1fs\n", modeLabel(m, tr), len(turns), wall.Seconds())

	mr := &ModeResult{Mode: modeLabel(m, tr), Transport: string(tr), Turns: len(turns), PromptTokens: st.Queries, CachedTokens: st.Hits,
		PromptTokensRecomputed: st.Queries - st.Hits, CPUSPerTurn: cpu.Seconds() / float64(len(turns)),
		BytesToUpstream: p.up.sent.Load(), PeakRSSMB: peak, WallS: wall.Seconds(), Outcomes: map[string]int{}}
	if st.Queries > 0 {
		mr.HitRatio = float64(st.Hits) / float64(st.Queries)
	}
	fillClient(mr, turns)
	var maxBody int
	for _, t := range turns {
		maxBody = max(maxBody, t.bodyBytes)
	}
	if mr.Storage, err = measureStorage(ctx, p, turns, rs != nil); err != nil {
		return nil, fmt.Errorf("measure storage: %w", err)
	}
	for _, o := range p.rec.observations() {
		mr.Outcomes[o.outcome]++
		mr.PromptTokensTokenized += int64(o.tokens - o.reused)
		mr.MaxPromptTokens = max(mr.MaxPromptTokens, o.tokens)
	}
	mr.Memory = memoryBound(peak, m != ModeFull, opts.Workload.Concurrency, mr.MaxPromptTokens, int64(maxBody), mr.BytesFromClients)
	// The simulator stays up for the turn pass (turn.go); its CPU is read now where the platform
	// tells, else when it stops (and then includes the turn pass's few turns).
	if c, ok := simi.(interface{ cpuSoFar() (float64, bool) }); ok {
		mr.SimCPUS, _ = c.cpuSoFar()
	}
	kept, simKept = true, true
	return &modeRun{result: mr, proxy: p, sim: simi, bodies: d.bodies, concurrency: opts.Workload.Concurrency}, nil
}

// runTarget drives an external server: client-side numbers only.
func runTarget(ctx context.Context, opts Options) (*ModeResult, error) {
	d := newDriver(opts.Workload, opts.Target)
	defer d.close()
	start := time.Now()
	turns, err := d.run(ctx)
	if err != nil {
		return nil, err
	}
	mr := &ModeResult{Mode: "target", Turns: len(turns), WallS: time.Since(start).Seconds(), Outcomes: map[string]int{}}
	fillClient(mr, turns)
	for _, t := range turns {
		mr.PromptTokens += uint64(t.inputTokens)
		mr.CachedTokens += uint64(t.cachedTokens)
		mr.MaxPromptTokens = max(mr.MaxPromptTokens, t.inputTokens)
	}
	mr.PromptTokensRecomputed = mr.PromptTokens - mr.CachedTokens
	if mr.PromptTokens > 0 {
		mr.HitRatio = float64(mr.CachedTokens) / float64(mr.PromptTokens)
	}
	return mr, nil
}

// fillClient sets the client-side numbers: TTFT percentiles and request bytes.
func fillClient(mr *ModeResult, turns []turnResult) {
	ttft := make([]float64, 0, len(turns))
	for _, t := range turns {
		ttft = append(ttft, float64(t.ttft.Microseconds())/1000)
		mr.BytesFromClients += int64(t.bodyBytes)
	}
	mr.TTFTMSP50, mr.TTFTMSP99 = percentile(ttft, 50), percentile(ttft, 99)
}

// fillPrep sets the per-bucket preparation percentiles from the timed samples.
func fillPrep(mr *ModeResult) {
	for _, b := range buckets {
		var ms, cpu, coldMS, coldCPU []float64
		for _, s := range mr.PrepSamples {
			if bucketOf(s.Tokens) != b.name {
				continue
			}
			if len(s.MS) > 0 {
				coldMS, ms = append(coldMS, s.MS[0]), append(ms, s.MS[1:]...)
			}
			if len(s.CPUMS) > 0 {
				coldCPU, cpu = append(coldCPU, s.CPUMS[0]), append(cpu, s.CPUMS[1:]...)
			}
		}
		if len(ms) > 0 {
			mr.PrepMSP50.set(b.name, percentile(ms, 50))
			mr.PrepMSP99.set(b.name, percentile(ms, 99))
		}
		if len(cpu) > 0 {
			mr.PrepCPUMSP50.set(b.name, percentile(cpu, 50))
			mr.PrepCPUMSP99.set(b.name, percentile(cpu, 99))
		}
		if len(coldMS) > 0 {
			mr.PrepColdMSP50.set(b.name, percentile(coldMS, 50))
		}
		if len(coldCPU) > 0 {
			mr.PrepColdCPUMSP50.set(b.name, percentile(coldCPU, 50))
		}
	}
}

// fillRatios sets every mode's ratios versus the full mode of the same run (none without one).
func (r *Result) fillRatios() {
	full := r.mode(ModeFull)
	if full == nil {
		return
	}
	f := *full // the full mode's own ratios (1×) are written into the slice below
	for i := range r.Modes {
		m := &r.Modes[i]
		m.PrepRatioVsFull = ratioOf(f.PrepMSP50, m.PrepMSP50)
		m.PrepCPURatioVsFull = ratioOf(f.PrepCPUMSP50, m.PrepCPUMSP50)
		m.PrepColdRatioVsFull = ratioOf(f.PrepColdMSP50, m.PrepColdMSP50)
		m.PrepColdCPURatioVsFull = ratioOf(f.PrepColdCPUMSP50, m.PrepColdCPUMSP50)
		m.TurnCPURatioVsFull = ratioOf(f.TurnCPUMSP50, m.TurnCPUMSP50)
	}
}

func machine() Machine {
	m := Machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}
