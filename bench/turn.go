package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// replayHeader marks a turn the turn pass sends again: the preparation recorder keeps only its
// outcome, and the proxy signals when its handler returned.
const replayHeader = "X-Stitch-Bench-Replay"

// The paths a replayed continuation is sent down (TurnTiming.Path).
const (
	// pathHot is the workload's own: the previous response's hot entry (canonical, exact), or a
	// full render (full).
	pathHot = "hot"
	// pathL1 drops the hot entry first: the artifact is read back from L1, opened and extended
	// (another conversation evicted the entry, or a restart emptied the hot cache).
	pathL1 = "l1"
	// pathRedis drops the artifact's links from L1 too: they are read from Redis (another pod
	// served the previous turn).
	pathRedis = "redis"
)

// Repetitions per sampled turn and path, and the sampled turns per bucket the pass sends again.
const (
	turnRepsHot          = 3
	turnRepsCold         = 2
	turnSamplesPerBucket = samplesPerBucket
)

// TurnTiming is one sampled continuation sent again, whole (parse, store reads, preparation,
// upstream request, stream handling, persistence), alone, down one path.
type TurnTiming struct {
	Session int `json:"session"`
	Turn    int `json:"turn"`
	// Tokens is the prompt length of the turn in the workload.
	Tokens int `json:"tokens"`
	// Path is "hot", "l1" or "redis" (see the turn pass in [Run]).
	Path string `json:"path"`
	// Outcome and Reused are the last repetition's artifact resolution and reused ids; Tier is
	// "redis" when it read from Redis, else "local".
	Outcome string `json:"outcome"`
	Reused  int    `json:"reused"`
	Tier    string `json:"tier"`
	// CPUMS is the process CPU time of each repetition (every thread: handler, runtime, Redis
	// client; the simulator is a child process); AllocKB the heap bytes it allocated, in KiB.
	CPUMS   []float64 `json:"cpu_ms"`
	AllocKB []float64 `json:"alloc_kb"`
}

// turnSlot is one mode's sampled turn in the turn pass.
type turnSlot struct {
	run    *modeRun
	sample prepSample
	body   []byte
}

// timeTurns sends each mode's sampled continuations again, one at a time, and measures the
// process CPU time of each whole turn (CLOCK_PROCESS_CPUTIME_ID on Linux: every thread of this
// process, from the request's first byte written until the server's handler returned). Nothing
// else runs meanwhile: the driver is a raw keep-alive connection that writes a prepared request
// and reads the response without parsing it inside the window, and the simulator is a child
// process (with an in-process simulator its work counts too). Turns are interleaved across
// modes, as the preparation pass, each turn after a collection outside the windows; a window
// therefore pays its allocations' assists but rarely a whole collection (TurnTiming.AllocKB
// shows what it leaves to collect). Each replay continues the same previous response as the
// workload's turn did (a branch), down every path the mode has: the hot entry put back first
// (the workload's path), the hot entry dropped (L1), the L1 links dropped too (Redis).
func timeTurns(ctx context.Context, runs []*modeRun, opts Options) error {
	byKey := map[turnKey][]turnSlot{}
	var keys []turnKey
	tokens := map[turnKey]int{}
	for _, r := range runs {
		if r.sim == nil || r.bodies == nil {
			continue
		}
		r.proxy.rec.mu.Lock()
		for _, b := range buckets {
			kept := r.proxy.rec.samples[b.name]
			for _, s := range kept[:min(len(kept), turnSamplesPerBucket)] {
				body, ok := r.bodies[s.key]
				if !ok {
					continue
				}
				if _, seen := byKey[s.key]; !seen {
					keys = append(keys, s.key)
					tokens[s.key] = s.tokens
				}
				byKey[s.key] = append(byKey[s.key], turnSlot{run: r, sample: s, body: body})
			}
		}
		r.proxy.rec.mu.Unlock()
	}
	slices.SortStableFunc(keys, func(a, b turnKey) int { return tokens[a] - tokens[b] })
	conns := map[*modeRun]*replayConn{}
	defer func() {
		for _, c := range conns {
			c.close()
		}
	}()
	connOf := func(r *modeRun) (*replayConn, error) {
		if c := conns[r]; c != nil {
			return c, nil
		}
		u, err := url.Parse(r.proxy.url)
		if err != nil {
			return nil, fmt.Errorf("proxy url: %w", err)
		}
		c := &replayConn{addr: u.Host}
		conns[r] = c
		return c, nil
	}
	for _, k := range keys {
		runtime.GC()
		for _, sl := range byKey[k] {
			c, err := connOf(sl.run)
			if err != nil {
				return err
			}
			for _, path := range turnPaths(sl.run.proxy) {
				t := TurnTiming{Session: k.session, Turn: k.turn, Tokens: sl.sample.tokens, Path: path}
				reps := turnRepsCold
				if path == pathHot {
					reps = turnRepsHot
				}
				for range reps {
					if err := c.replay(ctx, sl, path, &t); err != nil {
						return fmt.Errorf("%s: turn pass, session %d turn %d (%s): %w", sl.run.result.Mode, k.session, k.turn, path, err)
					}
				}
				sl.run.result.TurnSamples = append(sl.run.result.TurnSamples, t)
			}
		}
	}
	if opts.ProfileDir == "" {
		return nil
	}
	// One CPU profile per mode of its 100k turns down the workload's path, each sent
	// profileReps times: where a whole turn's CPU goes.
	if err := os.MkdirAll(opts.ProfileDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", opts.ProfileDir, err)
	}
	for _, r := range runs {
		var slots []turnSlot
		for _, k := range keys {
			for _, sl := range byKey[k] {
				if sl.run == r && bucketOf(sl.sample.tokens) == "100k" {
					slots = append(slots, sl)
				}
			}
		}
		if len(slots) == 0 {
			continue
		}
		c, err := connOf(r)
		if err != nil {
			return err
		}
		path := filepath.Join(opts.ProfileDir, "turn-"+r.result.Mode+".pprof")
		var t TurnTiming
		err = writeCPUProfile(path, func() error {
			for range profileReps {
				for _, sl := range slots {
					if err := c.replay(ctx, sl, pathHot, &t); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: profile pass: %w", r.result.Mode, err)
		}
		fmt.Fprintf(opts.Progress, "%s: %d turns of 100k in %s\n", r.result.Mode, profileReps*len(slots), path)
	}
	return nil
}

// writeCPUProfile writes a CPU profile of work to path, starting from a collected heap so that
// earlier passes' garbage is not charged to it.
func writeCPUProfile(path string, work func() error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	runtime.GC()
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("profile %s: %w", path, err)
	}
	err = work()
	pprof.StopCPUProfile()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write %s: %w", path, cerr)
	}
	return err
}

// profileReps is how many times the profile pass sends each 100k turn.
const profileReps = 60

// turnPaths are the paths a mode's proxy has: the hot one only without artifacts, Redis only
// with a portable tier.
func turnPaths(p *proxy) []string {
	switch {
	case p.arts == nil:
		return []string{pathHot}
	case p.l2:
		return []string{pathHot, pathL1, pathRedis}
	}
	return []string{pathHot, pathL1}
}

// replayConn is the turn pass's client: one keep-alive connection per proxy, requests written as
// prepared bytes and responses read whole before they are looked at.
type replayConn struct {
	addr  string
	conn  net.Conn
	br    *bufio.Reader
	req   []byte
	resp  bytes.Buffer
	alloc []metrics.Sample
}

func (c *replayConn) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// replay sends the slot's turn down path once and appends its CPU time to t.
func (c *replayConn) replay(ctx context.Context, sl turnSlot, path string, t *TurnTiming) error {
	p := sl.run.proxy
	tenant, prev := sl.sample.in.Tenant, sl.sample.in.PreviousID
	if p.arts != nil && p.arts.Hot != nil {
		// The workload's commit of the next turn retired the entry; the timing engine's cache
		// holds a copy. Put back for every path, then dropped for the cold ones.
		if p.held != nil {
			p.held.CopyTo(p.arts.Hot, tenant, prev)
		}
		if path != pathHot {
			p.arts.Hot.Forget(tenant, prev)
		}
	}
	if path == pathRedis {
		art, _, err := p.store.Get(ctx, tenant, prev)
		if err != nil {
			return fmt.Errorf("read the previous artifact's chain: %w", err)
		}
		for _, id := range append([]string{prev}, art.Chain...) {
			p.store.EvictLocal(tenant, id)
		}
	}
	var l2Hits uint64
	if p.store != nil {
		l2Hits = p.store.Stats().L2Hits
	}
	if err := c.dial(ctx); err != nil {
		return err
	}
	c.req = append(c.req[:0], "POST /v1/responses HTTP/1.1\r\nHost: "...)
	c.req = append(c.req, c.addr...)
	c.req = append(c.req, "\r\nContent-Type: application/json\r\nAuthorization: Bearer bench\r\n"...)
	c.req = append(c.req, replayHeader+": 1\r\n"+sessionHeader+": bench-session-"...)
	c.req = strconv.AppendInt(c.req, int64(t.Session), 10)
	c.req = append(c.req, "\r\nContent-Length: "...)
	c.req = strconv.AppendInt(c.req, int64(len(sl.body)), 10)
	c.req = append(c.req, "\r\n\r\n"...)
	c.req = append(c.req, sl.body...)
	select { // a signal left by an earlier turn that failed before reading it
	case <-p.handled:
	default:
	}
	if c.alloc == nil {
		c.alloc = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	}
	c.resp.Reset()

	metrics.Read(c.alloc)
	alloc0, cpu0 := c.alloc[0].Value.Uint64(), processCPUPrecise()
	status, closeConn, err := c.roundTrip()
	if err == nil {
		select {
		case <-p.handled:
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(30 * time.Second):
			err = fmt.Errorf("the server's handler did not return")
		}
	}
	cpu1 := processCPUPrecise()
	metrics.Read(c.alloc)
	alloc1 := c.alloc[0].Value.Uint64()

	if closeConn || err != nil {
		c.close()
	}
	if err != nil {
		return err
	}
	id, err := completedID(status, c.resp.Bytes())
	if err != nil {
		return err
	}
	if p.arts != nil && p.arts.Hot != nil {
		p.arts.Hot.Forget(tenant, id) // the branch's own entry: the next repetition starts alike
	}
	t.CPUMS = append(t.CPUMS, float64(cpu1-cpu0)/1e6)
	t.AllocKB = append(t.AllocKB, float64(alloc1-alloc0)/1024)
	p.rec.mu.Lock()
	t.Outcome, t.Reused = p.rec.replayOutcome, p.rec.replayReused
	p.rec.mu.Unlock()
	t.Tier = "local"
	if p.store != nil && p.store.Stats().L2Hits > l2Hits {
		t.Tier = "redis"
	}
	return nil
}

func (c *replayConn) dial(ctx context.Context) error {
	if c.conn != nil {
		return nil
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return fmt.Errorf("dial the proxy: %w", err)
	}
	c.conn, c.br = conn, bufio.NewReaderSize(conn, 64<<10)
	return nil
}

// roundTrip writes the prepared request and reads the whole response body into c.resp. It
// reports the status and whether the server closes the connection.
func (c *replayConn) roundTrip() (int, bool, error) {
	if _, err := c.conn.Write(c.req); err != nil {
		return 0, true, fmt.Errorf("write request: %w", err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, true, fmt.Errorf("read response: %w", err)
	}
	_, err = c.resp.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return resp.StatusCode, true, fmt.Errorf("read response body: %w", err)
	}
	return resp.StatusCode, resp.Close, nil
}

// completedID returns the response id of a replayed turn's response.completed event, or why
// there is none.
func completedID(status int, body []byte) (string, error) {
	if status != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", status, truncate(bytes.TrimSpace(body), 300))
	}
	for line := range bytes.Lines(body) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		switch typ := gjson.GetBytes(data, "type").Str; typ {
		case "response.completed":
			return gjson.GetBytes(data, "response.id").Str, nil
		case "response.failed", "response.incomplete", "error":
			return "", fmt.Errorf("%s: %s", typ, truncate(data, 300))
		}
	}
	return "", fmt.Errorf("stream ended without a terminal event")
}

// fillTurns sets the per-bucket turn percentiles from the turn pass's samples.
func fillTurns(mr *ModeResult) {
	for _, b := range buckets {
		by := map[string][]float64{}
		var alloc []float64
		for _, s := range mr.TurnSamples {
			if bucketOf(s.Tokens) != b.name {
				continue
			}
			by[s.Path] = append(by[s.Path], s.CPUMS...)
			if s.Path == pathHot {
				alloc = append(alloc, s.AllocKB...)
			}
		}
		for path, dst := range map[string]*BucketMS{pathHot: &mr.TurnCPUMSP50, pathL1: &mr.TurnCPUL1MSP50, pathRedis: &mr.TurnCPURedisMSP50} {
			if xs := by[path]; len(xs) > 0 {
				dst.set(b.name, percentile(xs, 50))
			}
		}
		if len(alloc) > 0 {
			mr.TurnAllocKBP50.set(b.name, percentile(alloc, 50))
		}
		var bound, boundCPU []float64
		for _, s := range mr.PrepSamples {
			if bucketOf(s.Tokens) == b.name && len(s.BoundMS) > 1 {
				bound = append(bound, s.BoundMS[1:]...)
				if len(s.BoundCPUMS) > 1 {
					boundCPU = append(boundCPU, s.BoundCPUMS[1:]...)
				}
			}
		}
		if len(bound) > 0 {
			mr.PrepBoundMSP50.set(b.name, percentile(bound, 50))
		}
		if len(boundCPU) > 0 {
			mr.PrepBoundCPUMSP50.set(b.name, percentile(boundCPU, 50))
		}
	}
}

// newText is the text a continuation's new input items hold (message text, tool outputs; other
// items as their JSON), joined by newlines: boundText's stand-in where no mode of the run has an
// artifact of the previous prompt.
func newText(items []json.RawMessage, stored int) string {
	var b strings.Builder
	for _, raw := range items[min(stored, len(items)):] {
		v := gjson.ParseBytes(raw)
		var part gjson.Result
		switch v.Get("type").Str {
		case "function_call_output":
			part = v.Get("output")
		case "message", "":
			part = v.Get("content")
		default:
			b.Write(raw)
			b.WriteByte('\n')
			continue
		}
		if part.IsArray() {
			for _, c := range part.Array() {
				b.WriteString(c.Get("text").Str)
				b.WriteByte('\n')
			}
			continue
		}
		b.WriteString(part.Str)
		b.WriteByte('\n')
	}
	return b.String()
}
