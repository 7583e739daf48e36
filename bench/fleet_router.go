package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/fleet"
)

// The fleet's routing policies (issue 30). Every scoring decision is llm-d-kv-cache's: its token
// processor turns the prompt ids into block keys, its index (fed by the replicas' KV events)
// finds which replica holds which block, and its longest-prefix scorer scores them; the router
// picks the best score, ties by load.
const (
	// PolicyRoundRobin ignores the cache: replica i, i+1, … in turn (load-only routing).
	PolicyRoundRobin = "round_robin"
	// PolicyPrecisePrefix is the gateway topology: client → stitch → router → vLLM. The router
	// reads the token-id prompt and cache_salt of stitch's /v1/completions body, as llm-d's
	// token producer passes a token-id prompt through to the precise-prefix scorer.
	PolicyPrecisePrefix = "precise_prefix"
	// PolicySidecarRender is the sidecar topology: client → router → stitch → vLLM, one stitch
	// per replica sharing the stores. The router resolves each Responses request through POST
	// /v1/responses/render of a random stitch replica (what llm-d's token producer would call),
	// then scores its ids.
	PolicySidecarRender = "sidecar_render"
	// PolicySessionAffinity is the sidecar topology without a token producer: the router pins
	// each conversation (the session_id header Codex CLI and the Agents SDK send) to the replica
	// its first request went to, the least loaded then (llm-d's session-affinity fallback).
	PolicySessionAffinity = "session_affinity"
	// sessionHeader names a conversation to the router.
	sessionHeader = "Session_id"
)

// ParsePolicy checks a fleet policy name (one of [FleetPolicies]).
func ParsePolicy(s string) (string, error) {
	if !slices.Contains(FleetPolicies, s) {
		return "", fmt.Errorf("%w: unknown fleet policy %q (want %s)", ErrBadOptions, s, strings.Join(FleetPolicies, ", "))
	}
	return s, nil
}

// sidecarTopology reports whether a policy's router stands in front of the stitch sidecars.
func sidecarTopology(policy string) bool {
	return policy == PolicySidecarRender || policy == PolicySessionAffinity
}

// FleetPolicies are the policies a fleet run compares, in report order.
var FleetPolicies = []string{PolicyRoundRobin, PolicyPrecisePrefix, PolicySidecarRender, PolicySessionAffinity}

// fleetPod is one replica as the router sees it.
type fleetPod struct {
	id      string // the pod identifier of its KV-event topic (its simulator's host:port)
	backend string // where the router forwards: the simulator (gateway) or its stitch (sidecar)
	render  string // sidecar: its stitch's base URL
}

// fleetRouter is the bench's router: an HTTP reverse proxy that picks a replica per generation
// request by policy. Within a wave (the driver sends turn t of every session together) it
// decides every request against the index as the previous wave left it, and holds the forwards
// until the wave's decisions are made: the events of a request forwarded earlier in the wave
// cannot reorder later decisions, so a run's placements — and its hit ratio — depend on the
// token ids alone, not on which request reached the router first.
type fleetRouter struct {
	policy string
	pods   []fleetPod
	index  *fleet.Index
	model  string
	client *http.Client

	mu          sync.Mutex
	rr          int
	rng         *rand.Rand
	wave        *waveGate
	counts      map[string]int  // decisions per pod over the run
	sessions    map[string]int  // session_affinity: conversation → pod index
	cpu         []time.Duration // per decision: scoring (thread CPU)
	parseCPU    time.Duration   // all requests' body parses (thread CPU)
	renderMS    []float64
	scoreErrors int
	splitWaves  int
	blockKeys   int
	keyDigest   hash.Hash // SHA-256 over the block keys scored, in decision order
}

func newFleetRouter(policy string, pods []fleetPod, index *fleet.Index, model string, seed int64) *fleetRouter {
	return &fleetRouter{
		policy: policy, pods: pods, index: index, model: model,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}},
		rng:    rand.New(rand.NewPCG(uint64(seed), 30)), counts: map[string]int{}, sessions: map[string]int{},
		keyDigest: sha256.New(),
	}
}

// waveGate collects a wave's generation requests and decides them together once all n arrived
// (or after a bound, should a turn fail before it reaches the router), in an order set by their
// token ids — the same in every mode — not by arrival.
type waveGate struct {
	n       int
	pending []*pendingRoute
	decided bool
}

// pendingRoute is one request waiting for its wave's decisions.
type pendingRoute struct {
	ids     []uint32
	salt    string
	session string // session_affinity: the session_id header
	pod     fleetPod
	ready   chan struct{}
}

// beginWave announces the next n generation requests as one wave.
func (r *fleetRouter) beginWave(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wave = &waveGate{n: n}
}

func (r *fleetRouter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	generation := req.Method == http.MethodPost &&
		((sidecarTopology(r.policy) && req.URL.Path == "/v1/responses") ||
			(!sidecarTopology(r.policy) && req.URL.Path == "/v1/completions"))
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod := r.pods[0]
	if generation {
		if pod, err = r.route(req, body); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	r.forward(w, req, pod.backend, body)
}

// route picks the pod for one generation request: it joins the wave and returns once the wave is
// decided.
func (r *fleetRouter) route(req *http.Request, body []byte) (fleetPod, error) {
	var ids []uint32
	var salt string
	if r.policy == PolicySidecarRender {
		r.mu.Lock()
		via := r.pods[r.rng.IntN(len(r.pods))]
		r.mu.Unlock()
		start := time.Now()
		rendered, err := r.renderVia(req, via, body)
		if err != nil {
			return fleetPod{}, err
		}
		r.mu.Lock()
		r.renderMS = append(r.renderMS, float64(time.Since(start).Microseconds())/1000)
		r.mu.Unlock()
		body = rendered
	}
	session := req.Header.Get(sessionHeader)
	runtime.LockOSThread()
	cpu0, ok0 := threadCPU()
	if r.policy == PolicySessionAffinity {
		ids = sessionOrderKey(session) // the body stays unread: the header is all it routes by
	} else {
		ids, salt = promptOf(body)
	}
	cpu1, ok1 := threadCPU()
	runtime.UnlockOSThread()
	p := &pendingRoute{ids: ids, salt: salt, session: session, ready: make(chan struct{})}
	r.mu.Lock()
	if ok0 && ok1 {
		r.parseCPU += cpu1 - cpu0
	}
	g := r.wave
	if g == nil || g.decided {
		r.splitWaves++ // a request outside any announced wave
		g = &waveGate{n: 1}
	}
	g.pending = append(g.pending, p)
	if len(g.pending) >= g.n {
		r.decideLocked(req.Context(), g)
	}
	r.mu.Unlock()
	select {
	case <-p.ready:
	case <-time.After(30 * time.Second):
		r.mu.Lock()
		r.decideLocked(req.Context(), g)
		r.mu.Unlock()
	case <-req.Context().Done():
		return fleetPod{}, req.Context().Err()
	}
	return p.pod, nil
}

// decideLocked places every request of g, in token-id order: best llm-d score, ties by this
// wave's load, then by position (round robin: in turn).
func (r *fleetRouter) decideLocked(ctx context.Context, g *waveGate) {
	if g.decided {
		return
	}
	g.decided = true
	if len(g.pending) < g.n {
		r.splitWaves++
	}
	slices.SortStableFunc(g.pending, func(a, b *pendingRoute) int {
		if c := slices.Compare(a.ids, b.ids); c != 0 {
			return c
		}
		return strings.Compare(a.salt, b.salt)
	})
	if r.policy == PolicyRoundRobin {
		// A real round robin takes requests as they arrive, so a session's next turn lands on
		// any pod; a seeded shuffle stands for the arrival order (the same in every mode, as the
		// sort before it), where a fixed order would pin each session to one pod.
		r.rng.Shuffle(len(g.pending), func(i, j int) { g.pending[i], g.pending[j] = g.pending[j], g.pending[i] })
	}
	load := map[string]int{}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, p := range g.pending {
		cpu0, ok0 := threadCPU()
		switch r.policy {
		case PolicyRoundRobin:
			p.pod = r.pods[r.rr%len(r.pods)]
			r.rr++
		case PolicySessionAffinity:
			i, ok := r.sessions[p.session]
			if !ok || p.session == "" {
				for j, pod := range r.pods {
					if r.counts[pod.id] < r.counts[r.pods[i].id] {
						i = j
					}
				}
				if p.session != "" {
					r.sessions[p.session] = i
				}
			}
			p.pod = r.pods[i]
		default:
			scores, err := r.index.Score(ctx, p.ids, r.model, p.salt, "", nil)
			if err != nil && !errors.Is(err, fleet.ErrNoScore) {
				r.scoreErrors++
			}
			best := 0
			for i, pod := range r.pods {
				if sb, s := scores[r.pods[best].id], scores[pod.id]; s > sb || (s == sb && load[pod.id] < load[r.pods[best].id]) {
					best = i
				}
			}
			p.pod = r.pods[best]
		}
		load[p.pod.id]++
		r.counts[p.pod.id]++
		if cpu1, ok1 := threadCPU(); ok0 && ok1 {
			r.cpu = append(r.cpu, cpu1-cpu0)
		}
		if r.policy == PolicyPrecisePrefix || r.policy == PolicySidecarRender {
			r.digestKeys(p)
		}
	}
	// Released only once all are placed: a forwarded request's KV events reach the index while
	// the loop runs and would move later decisions of the same wave.
	for _, p := range g.pending {
		close(p.ready)
	}
}

// digestKeys folds the llm-d block keys of p's prompt into the run's key digest (outside the
// decision's CPU time).
func (r *fleetRouter) digestKeys(p *pendingRoute) {
	keys, err := r.index.BlockKeys(p.ids, r.model, p.salt, "")
	if err != nil {
		r.scoreErrors++
		return
	}
	var b [8]byte
	for _, k := range keys {
		binary.BigEndian.PutUint64(b[:], uint64(k))
		r.keyDigest.Write(b[:])
	}
	binary.BigEndian.PutUint64(b[:], ^uint64(0)) // request boundary
	r.keyDigest.Write(b[:])
	r.blockKeys += len(keys)
}

// sessionOrderKey stands a session id in for the prompt ids in a wave's decision order.
func sessionOrderKey(session string) []uint32 {
	k := make([]uint32, len(session))
	for i := range len(session) {
		k[i] = uint32(session[i])
	}
	return k
}

// promptOf reads a token-id prompt and its cache_salt from a /v1/completions body (gateway) or
// a /v1/responses/render answer (sidecar).
func promptOf(body []byte) ([]uint32, string) {
	res := gjson.GetManyBytes(body, "prompt", "token_ids", "cache_salt")
	arr := res[0]
	if !arr.IsArray() {
		arr = res[1]
	}
	ids := make([]uint32, 0, 1024)
	arr.ForEach(func(_, v gjson.Result) bool {
		ids = append(ids, uint32(v.Uint()))
		return true
	})
	return ids, res[2].Str
}

// renderVia asks a stitch replica for the request's prompt ids, with the client's credentials.
func (r *fleetRouter) renderVia(req *http.Request, via fleetPod, body []byte) ([]byte, error) {
	out, err := http.NewRequestWithContext(req.Context(), http.MethodPost, via.render+"/v1/responses/render", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header.Set("Content-Type", "application/json")
	out.Header.Set("Authorization", req.Header.Get("Authorization"))
	resp, err := r.client.Do(out)
	if err != nil {
		return nil, fmt.Errorf("render via %s: %w", via.render, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("render via %s: %d %s %v", via.render, resp.StatusCode, truncate(b, 200), err)
	}
	return b, nil
}

// forward sends the request to backend and streams the answer back, flushing as bytes arrive.
func (r *fleetRouter) forward(w http.ResponseWriter, req *http.Request, backend string, body []byte) {
	out, err := http.NewRequestWithContext(req.Context(), req.Method, backend+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = req.Header.Clone()
	resp, err := r.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// ttftRecorder wraps a simulator's handler and records, per generation request, the time from
// its arrival to the first byte of its answer: the model server's time to first token, which the
// prefill of the uncached tokens dominates — what placement changes.
type ttftRecorder struct {
	next http.Handler
	mu   sync.Mutex
	ms   []float64
}

func (t *ttftRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/completions" {
		t.next.ServeHTTP(w, req)
		return
	}
	fw := &firstByteWriter{ResponseWriter: w, start: time.Now()}
	t.next.ServeHTTP(fw, req)
	if !fw.at.IsZero() {
		t.mu.Lock()
		t.ms = append(t.ms, float64(fw.at.Sub(fw.start).Microseconds())/1000)
		t.mu.Unlock()
	}
}

// firstByteWriter notes when the first body byte is written: the simulator writes a stream's
// first event once the first token is sampled (after the prefill's time), or a whole answer.
type firstByteWriter struct {
	http.ResponseWriter
	start, at time.Time
}

func (f *firstByteWriter) Write(p []byte) (int, error) {
	if f.at.IsZero() && len(p) > 0 {
		f.at = time.Now()
	}
	return f.ResponseWriter.Write(p)
}

func (f *firstByteWriter) Flush() {
	if fl, ok := f.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// requestsPerPod lists the decisions per pod, in the pods' order.
func (r *fleetRouter) requestsPerPod() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, len(r.pods))
	for i, p := range r.pods {
		out[i] = r.counts[p.id]
	}
	return out
}

// cpuMSPerRequest is the router's mean thread CPU per decision (parse, block keys, index lookup,
// scoring), in ms; a sidecar render's CPU is the stitch replica's and is reported apart.
func (r *fleetRouter) cpuMSPerRequest() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cpu) == 0 {
		return 0
	}
	sum := r.parseCPU
	for _, c := range r.cpu {
		sum += c
	}
	return float64(sum.Microseconds()) / 1000 / float64(len(r.cpu))
}

func (r *fleetRouter) renderP50() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return percentile(slices.Clone(r.renderMS), 50)
}
