package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/sim"
)

// SimLauncher starts a fresh simulator (empty prefix cache) for one mode.
type SimLauncher interface {
	Start(ctx context.Context, w Workload) (SimInstance, error)
}

// SimInstance is one running simulator.
type SimInstance interface {
	// URL is the base URL of its vLLM API.
	URL() string
	// Stats reads its prefix-cache counters (tokens).
	Stats(ctx context.Context) (SimStats, error)
	// Close stops it.
	Close() error
	// CPUSeconds is the simulator's CPU time, known after Close for a child process (0 in
	// process).
	CPUSeconds() float64
}

// SimStats are the simulator's prefix-cache counters in tokens.
type SimStats struct {
	Queries, Hits uint64
}

// InProcessSim runs the simulator in this process on a loopback port. Its CPU time is then part of
// the process's and cannot be told apart from the proxy's; use it for tests.
type InProcessSim struct {
	Model *render.Renderer
	// Family is the format the answers are written in (sim.Options' parsers). Zero: Qwen3.
	Family family.Names
	Logger *slog.Logger
}

// Start implements SimLauncher.
func (l InProcessSim) Start(_ context.Context, w Workload) (SimInstance, error) {
	logger := l.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s, err := sim.New(sim.Options{
		Tokenizer: l.Model.Tokenizer(), Renderer: sim.ModelRenderer(l.Model), ServedModelName: w.Model,
		MaxModelLen: w.MaxModelLen, KVBlocks: w.KVBlocks, Seed: w.Seed, Drift: w.Drift,
		TTFTBase: w.TTFTBase, PrefillPerToken: w.PrefillPerToken, DecodePerToken: w.DecodePerToken,
		OutputLen: w.OutputLen, Fast: w.TTFTBase == 0 && w.PrefillPerToken == 0 && w.DecodePerToken == 0, Logger: logger,
		ToolCallParser: l.Family.ToolCallParser, ReasoningParser: l.Family.ReasoningParser,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSimUnavailable, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSimUnavailable, err)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	p := &inProcess{s: s, hs: hs, url: "http://" + ln.Addr().String()}
	if p.gs, p.grpcAddr, err = serveGRPC(s); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("%w: %w", ErrSimUnavailable, err)
	}
	return p, nil
}

type inProcess struct {
	s        *sim.Server
	hs       *http.Server
	url      string
	gs       interface{ Stop() }
	grpcAddr string
}

// GRPCAddr is the host:port of its gRPC engine API.
func (p *inProcess) GRPCAddr() string { return p.grpcAddr }

func (p *inProcess) URL() string { return p.url }

func (p *inProcess) CPUSeconds() float64 { return 0 }

func (p *inProcess) Stats(context.Context) (SimStats, error) {
	st := p.s.Stats()
	return SimStats{Queries: st.Queries, Hits: st.Hits}, nil
}

func (p *inProcess) Close() error {
	if p.gs != nil {
		p.gs.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.hs.Shutdown(ctx); err != nil {
		// A connection the client dialed but never used counts as active for 5 s (net/http's
		// StateNew rule), so Shutdown may time out with nothing running: close what is left.
		return p.hs.Close()
	}
	return nil
}

// ProcessSim runs `<Path> sim …` (the stitch binary) as a child process, so the proxy's CPU time
// and memory are measured without the simulator's.
type ProcessSim struct {
	// Path is the stitch executable (os.Executable()).
	Path string
	// Stderr receives the child's log (warnings only); nil discards it.
	Stderr io.Writer
	// ModelDir is the child's --model-dir: the proxy's model directory, whose tokenizer the
	// simulator reads prompts and writes answers with. Empty: the bundled demo model.
	ModelDir string
	// Family is the format the child's answers are written in (its --tool-call-parser and
	// --reasoning-parser). Zero: Qwen3.
	Family family.Names
}

// Start implements SimLauncher.
func (l ProcessSim) Start(ctx context.Context, w Workload) (SimInstance, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSimUnavailable, err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	gport, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSimUnavailable, err)
	}
	grpcAddr := "127.0.0.1:" + strconv.Itoa(gport)
	us := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', -1, 64)
	}
	args := []string{"sim", "--listen", addr, "--served-model-name", w.Model,
		"--max-model-len", strconv.Itoa(w.MaxModelLen), "--kv-blocks", strconv.Itoa(w.KVBlocks),
		"--seed", strconv.FormatInt(w.Seed, 10), "--drift", strconv.FormatFloat(w.Drift, 'f', -1, 64),
		"--ttft-base", w.TTFTBase.String(), "--prefill-us-per-token", us(w.PrefillPerToken),
		"--decode-us-per-token", us(w.DecodePerToken), "--output-len", strconv.Itoa(w.OutputLen), "--log-level", "warn",
		"--grpc-listen", grpcAddr}
	if l.ModelDir != "" {
		args = append(args, "--model-dir", l.ModelDir)
	}
	if l.Family.ToolCallParser != "" {
		args = append(args, "--tool-call-parser", l.Family.ToolCallParser)
	}
	if l.Family.ReasoningParser != "" {
		args = append(args, "--reasoning-parser", l.Family.ReasoningParser)
	}
	cmd := exec.Command(l.Path, args...)
	cmd.Stdout = io.Discard
	cmd.Stderr = l.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start %s sim: %w", ErrSimUnavailable, l.Path, err)
	}
	p := &child{cmd: cmd, url: "http://" + addr, grpcAddr: grpcAddr, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	if err := p.waitHealthy(ctx, 30*time.Second); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

type child struct {
	cmd      *exec.Cmd
	url      string
	grpcAddr string
	done     chan error
	cpu      float64
	closed   bool
}

func (p *child) URL() string { return p.url }

// GRPCAddr is the host:port of the child's gRPC engine API (--grpc-listen).
func (p *child) GRPCAddr() string { return p.grpcAddr }

func (p *child) CPUSeconds() float64 { return p.cpu }

// cpuSoFar returns the running child's CPU seconds and true, where the platform tells (Linux).
func (p *child) cpuSoFar() (float64, bool) {
	d, ok := childCPU(p.cmd.Process.Pid)
	return d.Seconds(), ok
}

// waitHealthy polls GET /health until the child answers (it loads the tokenizer first).
func (p *child) waitHealthy(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("%w: sim exited: %v", ErrSimUnavailable, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: no answer on %s within %s", ErrSimUnavailable, p.url, limit)
		}
	}
}

// Stats scrapes the child's /metrics for vLLM's prefix-cache counters.
func (p *child) Stats(ctx context.Context) (SimStats, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return SimStats{}, fmt.Errorf("scrape sim metrics: %w", err)
	}
	defer resp.Body.Close()
	return parsePrefixCounters(resp.Body)
}

// parsePrefixCounters reads vllm:prefix_cache_queries_total and _hits_total from Prometheus text
// (summing label sets).
func parsePrefixCounters(r io.Reader) (SimStats, error) {
	var st SimStats
	var seen int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var dst *uint64
		switch {
		case strings.HasPrefix(line, "vllm:prefix_cache_queries_total"):
			dst = &st.Queries
		case strings.HasPrefix(line, "vllm:prefix_cache_hits_total"):
			dst = &st.Hits
		default:
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return st, fmt.Errorf("parse %q: %w", line, err)
		}
		*dst += uint64(v)
		seen++
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	if seen < 2 {
		return st, errors.New("sim metrics lack vllm:prefix_cache_queries_total or _hits_total")
	}
	return st, nil
}

// Close interrupts the child, waits for it and records its CPU seconds.
func (p *child) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	_ = p.cmd.Process.Signal(os.Interrupt)
	var err error
	select {
	case err = <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		err = <-p.done
	}
	if ps := p.cmd.ProcessState; ps != nil {
		p.cpu = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil // interrupted on purpose
	}
	return err
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
