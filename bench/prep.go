package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/upstream"
)

// Context buckets of the preparation table: a prompt of n tokens falls in bucket b when
// b/√2 ≤ n < b·√2 (so "100k" is 70,711…141,420 tokens).
var buckets = []struct {
	name   string
	tokens int
}{{"1k", 1000}, {"10k", 10000}, {"100k", 100000}}

// bucketOf returns the table bucket of a prompt length, or "" when it is in none.
func bucketOf(n int) string {
	for _, b := range buckets {
		if float64(n) >= float64(b.tokens)/math.Sqrt2 && float64(n) < float64(b.tokens)*math.Sqrt2 {
			return b.name
		}
	}
	return ""
}

// Samples kept per bin for the timing pass: more in the table's buckets, a few per power of two
// elsewhere (for the plot).
const (
	samplesPerBucket = 12
	samplesPerBin    = 3
)

// prepObs is one turn's preparation as the server ran it (under load).
type prepObs struct {
	tokens, reused int
	outcome        string
}

// prepSample is a turn kept for the timing pass.
type prepSample struct {
	key      turnKey
	priority uint64
	tokens   int
	in       *prepare.Input
}

// prepRecorder wraps a mode's engine: it records every turn's outcome and keeps the inputs of a
// deterministic sample of turns (the same turns in every mode: chosen by a hash of seed, session
// and turn) so their preparation can be timed again, alone, after the workload.
type prepRecorder struct {
	inner prepare.Engine
	seed  int64

	// hotCopy and hotDrop, when set, keep the hot entry a sampled turn was prepared from for the
	// timing pass, and let it go when the sample is displaced.
	hotCopy, hotDrop func(tenant, id string)

	mu       sync.Mutex
	tenantID string // the turns' tenant (the bench has one)
	obs      map[turnKey]prepObs
	samples  map[string][]prepSample // bin → kept samples, lowest priority first
	// replayOutcome and replayReused are the last replayed turn's resolution (turn.go).
	replayOutcome string
	replayReused  int
}

func newPrepRecorder(inner prepare.Engine, seed int64) *prepRecorder {
	return &prepRecorder{inner: inner, seed: seed, obs: map[turnKey]prepObs{}, samples: map[string][]prepSample{}}
}

// History implements prepare.HistoryKeeper for an inner engine that keeps histories, as the
// server would find it without the recorder.
func (r *prepRecorder) History(tenant, responseID string) *prepare.History {
	if k, ok := r.inner.(prepare.HistoryKeeper); ok {
		return k.History(tenant, responseID)
	}
	return nil
}

// Prepare implements prepare.Engine. The inner engine's prompt, after-response step included,
// passes through unchanged.
func (r *prepRecorder) Prepare(ctx context.Context, in *prepare.Input) (*prepare.Prompt, error) {
	p, err := r.inner.Prepare(ctx, in)
	key, ok := turnFrom(ctx)
	if err != nil {
		return p, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ok { // a replayed turn (turn.go): its outcome only
		r.replayOutcome, r.replayReused = string(p.Outcome), p.Reused
		return p, nil
	}
	r.tenantID = in.Tenant
	r.obs[key] = prepObs{tokens: len(p.IDs), reused: p.Reused, outcome: string(p.Outcome)}
	if in.PreviousID == "" {
		return p, nil // first turns are not continuations
	}
	bin, limit := bucketOf(len(p.IDs)), samplesPerBucket
	if bin == "" {
		bin, limit = fmt.Sprintf("log2:%d", int(math.Log2(float64(max(1, len(p.IDs)))))), samplesPerBin
	}
	s := prepSample{key: key, priority: r.priority(key), tokens: len(p.IDs), in: in}
	kept := r.samples[bin]
	i, _ := slices.BinarySearchFunc(kept, s.priority, func(a prepSample, p uint64) int {
		switch {
		case a.priority < p:
			return -1
		case a.priority > p:
			return 1
		}
		return 0
	})
	if i < limit {
		kept = slices.Insert(kept, i, s)
		if r.hotCopy != nil {
			r.hotCopy(in.Tenant, in.PreviousID)
		}
		if len(kept) > limit {
			if r.hotDrop != nil {
				r.hotDrop(kept[limit].in.Tenant, kept[limit].in.PreviousID)
			}
			kept = kept[:limit]
		}
		r.samples[bin] = kept
	}
	return p, nil
}

// tenant returns the tenant the turns were prepared for.
func (r *prepRecorder) tenant() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tenantID
}

func (r *prepRecorder) priority(k turnKey) uint64 {
	h := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(r.seed))
	binary.LittleEndian.PutUint64(b[8:], uint64(k.session))
	binary.LittleEndian.PutUint64(b[16:], uint64(k.turn))
	h.Write(b[:])
	return h.Sum64()
}

// PrepTiming is one sampled turn's preparation, timed alone.
type PrepTiming struct {
	Session int `json:"session"`
	Turn    int `json:"turn"`
	// Tokens is the prompt length; Reused the leading ids taken from an artifact.
	Tokens int `json:"tokens"`
	Reused int `json:"reused"`
	// Outcome is the artifact resolution of the timed call.
	Outcome string `json:"outcome"`
	// MS are the repetitions' wall times in milliseconds; CPUMS their thread CPU times (Linux),
	// which leave out time spent waiting for a core on a loaded machine. The first repetition is
	// cold (CPU caches holding other work), the others warm.
	MS    []float64 `json:"ms"`
	CPUMS []float64 `json:"cpu_ms,omitempty"`
	// BoundMS and BoundCPUMS time tokenizing only the turn's new text (boundText: the prompt's
	// ids after those it shares with the previous prompt, decoded) with the same tokenizer,
	// first cold then warm as MS: the physical bound of the preparation.
	BoundMS    []float64 `json:"bound_ms,omitempty"`
	BoundCPUMS []float64 `json:"bound_cpu_ms,omitempty"`
}

// prepareRequest is what the issue counts as a continuation's preparation: resolve, render,
// tokenize (Engine.Prepare) and encode the upstream request body, as the server's execute
// builds it.
func prepareRequest(ctx context.Context, p prepare.Engine, stop []uint32, in *prepare.Input) (*prepare.Prompt, [][]byte, error) {
	res, err := p.Prepare(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	req := upstream.CompletionRequest{
		Model: "bench", Prompt: res.IDs, PromptPrefix: res.PromptPrefix, PromptPrefixIDs: res.PromptPrefixIDs, MaxTokens: 4096,
		Stream: true, IncludeUsage: true, ReturnTokenIDs: true, StopTokenIDs: stop,
	}
	return res, req.Parts(), nil
}

// timeInterleaved re-runs the sampled turns' preparation sequentially with each mode's preparer
// (without background audits) and stores the timings in the runs' results. For each turn, each
// mode in turn prepares it once cold (the other modes' work since its last call has evicted its
// data from the CPU caches, as other conversations' requests do on a busy server) and then reps
// times warm (steady state, as a Go benchmark loop measures). Modes alternate turn by turn, so
// the modes compared are timed within milliseconds of each other: a shared machine's speed
// drifts over seconds. Inputs are the exact ones the servers built; the artifacts and hot
// entries they resolve are still cached, so a turn takes the path it took under load.
func timeInterleaved(ctx context.Context, runs []*modeRun, reps int) error {
	type slot struct {
		run    *modeRun
		sample prepSample
		out    *PrepTiming
	}
	byKey := map[turnKey][]slot{}
	var keys []turnKey
	tokens := map[turnKey]int{}
	for _, r := range runs {
		r.proxy.rec.mu.Lock()
		var all []prepSample
		for _, kept := range r.proxy.rec.samples {
			all = append(all, kept...)
		}
		r.proxy.rec.mu.Unlock()
		slices.SortFunc(all, func(a, b prepSample) int { return a.tokens - b.tokens })
		r.result.PrepSamples = make([]PrepTiming, len(all))
		for i, s := range all {
			r.result.PrepSamples[i] = PrepTiming{Session: s.key.session, Turn: s.key.turn}
			if _, seen := byKey[s.key]; !seen {
				keys = append(keys, s.key)
				tokens[s.key] = s.tokens
			}
			byKey[s.key] = append(byKey[s.key], slot{run: r, sample: s, out: &r.result.PrepSamples[i]})
		}
	}
	slices.SortStableFunc(keys, func(a, b turnKey) int { return tokens[a] - tokens[b] })
	runtime.GC()           // start from a collected heap: the workloads left garbage behind
	runtime.LockOSThread() // so the thread CPU clock follows the preparation
	defer runtime.UnlockOSThread()
	for _, k := range keys {
		// A collection before each turn, outside the timings: a server in steady state reuses
		// the heap it has, while the timing pass, allocating without pause, would otherwise
		// measure the kernel handing it fresh pages.
		runtime.GC()
		texts := make([]string, len(byKey[k]))
		shared := ""
		for i, sl := range byKey[k] {
			var ids []uint32
			for range 1 + reps { // the first is the cold one
				if err := ctx.Err(); err != nil {
					return err
				}
				var err error
				if ids, err = timeOnce(ctx, sl.run.proxy.timing, sl.run.proxy.stop, sl.sample, sl.out); err != nil {
					return fmt.Errorf("%s: %w", sl.run.result.Mode, err)
				}
			}
			if texts[i] = boundText(ctx, sl.run.proxy, sl.sample, ids); texts[i] != "" && shared == "" {
				shared = texts[i]
			}
		}
		for i, sl := range byKey[k] {
			m := sl.run.proxy.model
			if m == nil {
				continue
			}
			text := texts[i]
			if text == "" { // full mode: the same turn's text in a mode with artifacts
				text = shared
			}
			if text == "" {
				text = newText(sl.sample.in.Items, len(sl.sample.in.StoredIDs))
			}
			for range 1 + reps {
				timeBound(m, text, sl.out)
			}
		}
	}
	return nil
}

// boundText is the text a continuation adds to the previous turn's prompt, as the tokenizer
// sees it: the prompt's ids after those it shares with the previous response's prompt (its
// artifact), decoded. Any preparation must tokenize at least that much; tokenizing it alone is
// the physical bound (prep_bound_ms_p50). "" without an artifact store (full mode).
func boundText(ctx context.Context, p *proxy, s prepSample, ids []uint32) string {
	if p.store == nil || p.model == nil || s.in.PreviousID == "" {
		return ""
	}
	prev, _, err := p.store.Get(ctx, s.in.Tenant, s.in.PreviousID)
	if err != nil {
		return ""
	}
	k := 0
	for k < min(len(ids), len(prev.PromptIDs)) && ids[k] == prev.PromptIDs[k] {
		k++
	}
	return p.model.Tokenizer().Decode(ids[k:])
}

// timeOnce prepares one sampled turn, appends its wall and thread CPU time to t and returns the
// prompt's ids.
func timeOnce(ctx context.Context, p prepare.Engine, stop []uint32, s prepSample, t *PrepTiming) ([]uint32, error) {
	cpu0, cpuOK := threadCPU()
	start := time.Now()
	res, _, err := prepareRequest(ctx, p, stop, s.in)
	elapsed := time.Since(start)
	cpu1, _ := threadCPU()
	if err != nil {
		return nil, fmt.Errorf("time preparation of session %d turn %d: %w", s.key.session, s.key.turn, err)
	}
	t.Tokens, t.Reused, t.Outcome = len(res.IDs), res.Reused, string(res.Outcome)
	t.MS = append(t.MS, float64(elapsed.Microseconds())/1000)
	if cpuOK {
		t.CPUMS = append(t.CPUMS, float64((cpu1-cpu0).Microseconds())/1000)
	}
	return res.IDs, nil
}

// timeBound tokenizes text once and appends its wall and thread CPU time to t's bound.
func timeBound(m *render.Renderer, text string, t *PrepTiming) {
	cpu0, cpuOK := threadCPU()
	start := time.Now()
	m.Encode(text)
	elapsed := time.Since(start)
	cpu1, _ := threadCPU()
	t.BoundMS = append(t.BoundMS, float64(elapsed)/1e6)
	if cpuOK {
		t.BoundCPUMS = append(t.BoundCPUMS, float64(cpu1-cpu0)/1e6)
	}
}

// observations returns a copy of every turn's recorded preparation.
func (r *prepRecorder) observations() map[turnKey]prepObs {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[turnKey]prepObs, len(r.obs))
	for k, v := range r.obs {
		out[k] = v
	}
	return out
}
