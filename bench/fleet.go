package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/fleet"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/store"
)

// FleetOptions configure [RunFleet].
type FleetOptions struct {
	// Replicas is the number of simulated vLLM replicas, each with its own prefix cache, KV-event
	// publisher and latency model. Required (≥ 1).
	Replicas int
	// Workload is the agentic workload; its Concurrency is ignored (each wave sends one turn of
	// every session at once). Default [FleetWorkload].
	Workload Workload
	// Model and Family are the served model, as in [Options].
	Model   *render.Renderer
	Harmony *prepare.Harmony
	Family  family.Names
	// Policies to compare (default [FleetPolicies]); Modes the continuation modes each runs in
	// (default full and canonical).
	Policies []string
	Modes    []Mode
	// BlockSize is the replicas' KV block size and the router's (default 16).
	BlockSize int
	Logger    *slog.Logger
	Progress  io.Writer
}

// FleetWorkload is the fleet run's default: two sessions per replica's worth of conversations
// (eight), twelve requests each, tool outputs of ~1,500 tokens: continuations of 5k–20k tokens,
// around the anchor's 6.6k, and every replica busy.
func FleetWorkload() Workload {
	w := DefaultWorkload()
	w.Sessions, w.Turns, w.ToolOutputTokens = 8, 12, 1500
	w.MaxModelLen, w.KVBlocks = 65536, 65536
	return w
}

// FleetResult is bench.json's "fleet": one row per policy and mode.
type FleetResult struct {
	Replicas  int                 `json:"replicas"`
	BlockSize int                 `json:"block_size"`
	Sessions  int                 `json:"sessions"`
	Turns     int                 `json:"turns"`
	Policies  []FleetPolicyResult `json:"policies"`
}

// FleetPolicyResult is one policy in one mode.
type FleetPolicyResult struct {
	Name string `json:"name"`
	Mode string `json:"mode"`
	// Topology is "gateway" (stitch → router → vLLM) or "sidecar" (router → stitch → vLLM).
	Topology string `json:"topology"`
	Requests int    `json:"requests"`
	// HitRatio is prefix-cache hits / queries in tokens, summed over the replicas (vLLM's
	// prefix_cache_hits / prefix_cache_queries); PromptTokens and CachedTokens are the sums.
	HitRatio     float64 `json:"hit_ratio"`
	PromptTokens uint64  `json:"prompt_tokens"`
	CachedTokens uint64  `json:"cached_tokens"`
	// TTFTMSP50/P99 are the model servers' times to first token (request arrival at the replica
	// → first token written): TTFT base plus prefill of the uncached tokens, what placement
	// changes. ClientTTFTMSP50 is the client's (stitch's preparation and the router's wave hold
	// included).
	TTFTMSP50       float64 `json:"ttft_ms_p50"`
	TTFTMSP99       float64 `json:"ttft_ms_p99"`
	ClientTTFTMSP50 float64 `json:"client_ttft_ms_p50"`
	// BytesToUpstream are the completions bodies stitch sent (every replica's stitch, sidecar).
	BytesToUpstream int64 `json:"bytes_to_upstream"`
	// RouterCPUMSPerRequest is the router's thread CPU per decision: body parse, llm-d block
	// keys, index lookup and scoring. RenderMSP50 is the sidecar router's /v1/responses/render
	// call, wall time (the work is the stitch replica's).
	RouterCPUMSPerRequest float64 `json:"router_cpu_ms_per_request"`
	RenderMSP50           float64 `json:"render_ms_p50,omitempty"`
	// RequestsPerReplica counts the router's decisions per replica.
	RequestsPerReplica []int `json:"requests_per_replica"`
	// ScoreErrors counts failed index lookups (placed by load); SplitWaves counts waves decided
	// before all their requests arrived (placements then depend on arrival). Both 0 in a sound run.
	ScoreErrors int `json:"score_errors"`
	SplitWaves  int `json:"split_waves"`
	// BlockKeys counts the llm-d block keys the router computed from the prompts it scored, and
	// BlockKeyDigest is a SHA-256 over them in decision order (with each request's cache_salt
	// folded in, as llm-d keys it): equal digests in full and canonical mode mean the router saw
	// the same keys for every request (issue 30's block-key identity). Empty for policies that
	// score no prompt.
	BlockKeys      int    `json:"block_keys,omitempty"`
	BlockKeyDigest string `json:"block_key_digest,omitempty"`
}

// RunFleet runs the workload through N replicas once per policy and mode, each run on fresh
// replicas and a fresh llm-d index (see [fleetRouter] for the placement rule).
func RunFleet(ctx context.Context, o FleetOptions) (*FleetResult, error) {
	if o.Replicas < 1 || o.Model == nil {
		return nil, fmt.Errorf("%w: fleet needs replicas ≥ 1 and a model", ErrBadOptions)
	}
	if o.Workload.Sessions == 0 {
		o.Workload = FleetWorkload()
	}
	if err := o.Workload.validate(); err != nil {
		return nil, err
	}
	if len(o.Policies) == 0 {
		o.Policies = FleetPolicies
	}
	for _, p := range o.Policies {
		if _, err := ParsePolicy(p); err != nil {
			return nil, err
		}
	}
	if len(o.Modes) == 0 {
		o.Modes = []Mode{ModeFull, ModeCanonical}
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 16
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	rs, err := startRedis(ctx)
	if err != nil {
		return nil, err
	}
	defer rs.close()
	res := &FleetResult{Replicas: o.Replicas, BlockSize: o.BlockSize, Sessions: o.Workload.Sessions, Turns: o.Workload.Turns}
	for _, policy := range o.Policies {
		for _, m := range o.Modes {
			fmt.Fprintf(o.Progress, "fleet: %d replicas, %s, %s…\n", o.Replicas, policy, m)
			r, err := runFleetPolicy(ctx, o, policy, m, rs)
			if err != nil {
				return nil, fmt.Errorf("fleet %s %s: %w", policy, m, err)
			}
			res.Policies = append(res.Policies, *r)
		}
	}
	return res, nil
}

// fleetReplica is one simulated vLLM replica: server, KV-event publisher and TTFT recorder.
type fleetReplica struct {
	sim  *sim.Server
	pub  *sim.ZMQPublisher
	ttft *ttftRecorder
	hs   *http.Server
	url  string
	pod  string
	// base are the prefix-cache counters after the subscription probe, subtracted from the run's.
	base sim.Stats
}

func (r *fleetReplica) close() {
	if r.hs != nil {
		_ = r.hs.Close()
	}
	if r.pub != nil {
		_ = r.pub.Close()
	}
}

func startFleetReplica(ctx context.Context, o FleetOptions) (*fleetReplica, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSimUnavailable, err)
	}
	r := &fleetReplica{url: "http://" + ln.Addr().String(), pod: ln.Addr().String()}
	w := o.Workload
	if r.pub, err = sim.NewZMQPublisher(ctx, sim.ZMQPublisherOptions{Endpoint: "tcp://127.0.0.1:0", Bind: true,
		Topic: sim.KVEventsTopic(r.pod, w.Model), Logger: o.Logger}); err != nil {
		ln.Close()
		return nil, err
	}
	if r.sim, err = sim.New(sim.Options{
		Tokenizer: o.Model.Tokenizer(), Renderer: sim.ModelRenderer(o.Model), ServedModelName: w.Model,
		MaxModelLen: w.MaxModelLen, KVBlocks: w.KVBlocks, BlockSize: o.BlockSize, Seed: w.Seed, Drift: w.Drift,
		TTFTBase: w.TTFTBase, PrefillPerToken: w.PrefillPerToken, DecodePerToken: w.DecodePerToken,
		OutputLen: w.OutputLen, Logger: o.Logger, KVEvents: r.pub,
		ToolCallParser: o.Family.ToolCallParser, ReasoningParser: o.Family.ReasoningParser,
	}); err != nil {
		ln.Close()
		r.close()
		return nil, fmt.Errorf("%w: %w", ErrSimUnavailable, err)
	}
	r.ttft = &ttftRecorder{next: r.sim}
	r.hs = &http.Server{Handler: r.ttft, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.hs.Serve(ln) }()
	return r, nil
}

// fleetMarkerBase starts the token ids of barrier markers: far above any vocabulary.
const fleetMarkerBase = 4_000_000_000

// barrier waits until the index has applied every event each replica published so far: it
// publishes a marker block through the replica's own publisher (so it follows the replica's
// events on the same socket and the same pool queue) and waits for the index to hold it, then
// removes it again.
func barrier(ctx context.Context, ix *fleet.Index, reps []*fleetReplica, model string, blockSize, n int) error {
	for i, r := range reps {
		marker := make([]uint32, blockSize)
		for j := range marker {
			marker[j] = uint32(fleetMarkerBase + n*len(reps) + i)
		}
		hash := uint64(0xfeed_0000_0000_0000) | uint64(n*len(reps)+i)
		r.pub.Publish([]sim.KVEvent{sim.BlockStored{BlockHashes: []uint64{hash}, TokenIDs: marker, BlockSize: blockSize}})
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := ix.WaitHolds(wctx, r.pod, marker, model, "", "")
		cancel()
		if err != nil {
			return err
		}
		r.pub.Publish([]sim.KVEvent{sim.BlockRemoved{BlockHashes: []uint64{hash}}})
	}
	return nil
}

// subscribeReplica connects the index to a replica and waits until its events arrive: a ZMQ
// subscriber drops what was published before its subscription reached the publisher, so marker
// batches are sent until one is indexed.
func subscribeReplica(ctx context.Context, ix *fleet.Index, r *fleetReplica, model string, blockSize int) error {
	if err := ix.Subscribe(ctx, r.pod, "tcp://"+r.pub.Addr()); err != nil {
		return err
	}
	marker := make([]uint32, blockSize)
	for i := range marker {
		marker[i] = fleetMarkerBase - 1
	}
	for range 400 {
		r.pub.Publish([]sim.KVEvent{sim.BlockStored{BlockHashes: []uint64{0xfeed_ffff_ffff_ffff}, TokenIDs: marker, BlockSize: blockSize}})
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		err := ix.WaitHolds(wctx, r.pod, marker, model, "", "")
		cancel()
		if err == nil {
			r.pub.Publish([]sim.KVEvent{sim.BlockRemoved{BlockHashes: []uint64{0xfeed_ffff_ffff_ffff}}})
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("fleet: no KV events from %s after 20 s", r.pod)
}

func runFleetPolicy(ctx context.Context, o FleetOptions, policy string, m Mode, rs *redisServer) (*FleetPolicyResult, error) {
	w := o.Workload
	ix, err := fleet.NewIndex(ctx, fleet.Config{BlockSize: o.BlockSize})
	if err != nil {
		return nil, err
	}
	defer ix.Close(context.WithoutCancel(ctx))
	reps := make([]*fleetReplica, 0, o.Replicas)
	defer func() {
		for _, r := range reps {
			r.close()
		}
	}()
	for range o.Replicas {
		r, err := startFleetReplica(ctx, o)
		if err != nil {
			return nil, err
		}
		reps = append(reps, r)
		if err := subscribeReplica(ctx, ix, r, w.Model, o.BlockSize); err != nil {
			return nil, err
		}
		r.base = r.sim.Stats()
	}

	sidecar := sidecarTopology(policy)
	pods := make([]fleetPod, len(reps))
	var proxies []*proxy
	defer func() {
		for _, p := range proxies {
			p.close()
		}
	}()
	routerLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	routerURL := "http://" + routerLn.Addr().String()
	po := proxyOptions{mode: m, model: o.Model, harmony: o.Harmony, family: o.Family, transport: TransportHTTP, w: w, logger: o.Logger}
	// One seal key for every run, so a tenant's cache_salt (derived from it) is the same in each
	// mode and the runs' block keys compare.
	seal := sha256.Sum256([]byte("stitch bench fleet " + strconv.FormatInt(w.Seed, 10)))
	po.sealSecret = seal[:]
	if sidecar {
		// One stitch per replica, sharing the checkpoint store, the seal key and Redis (the
		// portable artifact tier), as pods behind one Service share them.
		po.checkpoints = store.NewMemory()
		if rs != nil {
			po.redis, po.redisPrefix = rs.client, "fleet-"+policy+"-"+string(m)
		}
		for i, r := range reps {
			po.upstream = r.url
			p, err := newProxy(po)
			if err != nil {
				routerLn.Close()
				return nil, err
			}
			proxies = append(proxies, p)
			pods[i] = fleetPod{id: r.pod, backend: p.url, render: p.url}
		}
	} else {
		po.upstream = routerURL
		p, err := newProxy(po)
		if err != nil {
			routerLn.Close()
			return nil, err
		}
		proxies = append(proxies, p)
		for i, r := range reps {
			pods[i] = fleetPod{id: r.pod, backend: r.url}
		}
	}
	router := newFleetRouter(policy, pods, ix, w.Model, w.Seed)
	hs := &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(routerLn) }()
	defer hs.Close()
	base := proxies[0].url
	if sidecar {
		base = routerURL
	}

	d := newDriver(w, base)
	defer d.close()
	states := make([]*sessionState, w.Sessions)
	for s := range states {
		states[s] = d.newSession(s)
	}
	for t := range w.Turns {
		router.beginWave(w.Sessions)
		g, gctx := errgroup.WithContext(ctx)
		for _, st := range states {
			g.Go(func() error { return d.step(gctx, st, t) })
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		if err := barrier(ctx, ix, reps, w.Model, o.BlockSize, t); err != nil {
			return nil, err
		}
	}

	out := &FleetPolicyResult{Name: policy, Mode: string(m), Topology: "gateway", Requests: len(d.results),
		RouterCPUMSPerRequest: router.cpuMSPerRequest(), RequestsPerReplica: router.requestsPerPod()}
	router.mu.Lock()
	out.ScoreErrors, out.SplitWaves = router.scoreErrors, router.splitWaves
	if router.blockKeys > 0 {
		out.BlockKeys, out.BlockKeyDigest = router.blockKeys, hex.EncodeToString(router.keyDigest.Sum(nil))
	}
	router.mu.Unlock()
	if sidecar {
		out.Topology = "sidecar"
	}
	if policy == PolicySidecarRender {
		out.RenderMSP50 = router.renderP50()
	}
	var ttfts, client []float64
	for _, r := range reps {
		st := r.sim.Stats()
		out.PromptTokens += st.Queries - r.base.Queries
		out.CachedTokens += st.Hits - r.base.Hits
		r.ttft.mu.Lock()
		ttfts = append(ttfts, r.ttft.ms...)
		r.ttft.mu.Unlock()
	}
	for _, p := range proxies {
		out.BytesToUpstream += p.up.sent.Load()
	}
	for _, tr := range d.results {
		client = append(client, float64(tr.ttft.Microseconds())/1000)
	}
	if out.PromptTokens > 0 {
		out.HitRatio = float64(out.CachedTokens) / float64(out.PromptTokens)
	}
	out.TTFTMSP50, out.TTFTMSP99 = percentile(ttfts, 50), percentile(ttfts, 99)
	out.ClientTTFTMSP50 = percentile(client, 50)
	return out, nil
}

// WriteFleetTable prints the fleet rows next to the anchor measurement (issue 30).
func (f *FleetResult) WriteFleetTable(w io.Writer) {
	fmt.Fprintf(w, "\nfleet: %d replicas, %d sessions × %d requests, block size %d\n", f.Replicas, f.Sessions, f.Turns, f.BlockSize)
	fmt.Fprintf(w, "%-15s %-9s %-8s %9s %10s %10s %12s %14s %12s %s\n", "policy", "mode", "topology", "hit_ratio", "ttft_p50", "ttft_p99", "client_p50", "upstream_MB", "router_cpu", "per_replica")
	for _, p := range f.Policies {
		fmt.Fprintf(w, "%-15s %-9s %-8s %9.6f %8.1fms %8.1fms %10.1fms %14.2f %10.3fms %v\n", p.Name, p.Mode, p.Topology, p.HitRatio,
			p.TTFTMSP50, p.TTFTMSP99, p.ClientTTFTMSP50, float64(p.BytesToUpstream)/(1<<20), p.RouterCPUMSPerRequest, p.RequestsPerReplica)
	}
	fmt.Fprintln(w, "anchor (2× gpt-oss-20b on vLLM under llm-d, 6.6k-token continuations): load-only 49.5% KV hit / 811 ms, precise prefix 99.1% / ~315 ms")
}
