package e2e

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

const (
	// modelName is the --served-model-name given to sim and serve; clients send it as "model".
	modelName = "qwen3"
	// apiKey is any bearer key: serve accepts every key in dev mode.
	apiKey = "test"

	// buildTimeout bounds `go build` of the binary (a cold cache on a loaded 2-core box).
	buildTimeout = 5 * time.Minute
	// readyTimeout bounds the wait for one process to answer its readiness probe.
	readyTimeout = 60 * time.Second
	// stopTimeout is how long a process gets to exit after SIGTERM before it is killed.
	stopTimeout = 10 * time.Second
	// requestTimeout bounds one test's requests against the stack.
	requestTimeout = 60 * time.Second
	// outputTail is how much of a process's output is logged when a test fails.
	outputTail = 16 << 10
)

// harness is the stack shared by every test of the package: built and started on first use
// (so `go test -run X` of a test that needs none starts nothing) and stopped by TestMain.
var harness lazyStack

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if err := harness.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: stop stack: %v\n", err)
	}
	os.Exit(code)
}

// requireStack returns the running stack, skipping the test under -short or while stitch
// still answers "not implemented yet", and failing it when the stack could not start for any
// other reason. When the test fails, the processes' output is appended to its log.
func requireStack(t *testing.T) *stack {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped under -short")
	}
	st, err := harness.get()
	var ni *notImplementedError
	if errors.As(err, &ni) {
		t.Skip(ni.Error())
	}
	if err != nil {
		t.Fatalf("e2e: start stitch: %v", err)
	}
	marks := st.outputMarks()
	t.Cleanup(func() {
		st.checkRaces(t, marks)
		if t.Failed() {
			st.logOutput(t)
		}
	})
	return st
}

// raceMarker starts every report of the race detector (stitch is built with -race under
// STITCH_E2E_RACE=1).
const raceMarker = "WARNING: DATA RACE"

// outputMarks returns the current output length of each process.
func (st *stack) outputMarks() []int {
	marks := make([]int, len(st.procs))
	for i, p := range st.procs {
		marks[i] = len(p.output())
	}
	return marks
}

// checkRaces fails t if a process reported a data race since marks were taken.
func (st *stack) checkRaces(t *testing.T, marks []int) {
	t.Helper()
	for i, p := range st.procs {
		checkRace(t, p, marks[i])
	}
}

// checkRace fails t if p's output from offset from on holds a race report.
func checkRace(t *testing.T, p *proc, from int) {
	t.Helper()
	out := p.output()
	if i := strings.Index(out[from:], raceMarker); i >= 0 {
		report := out[from+i:]
		if len(report) > outputTail {
			report = report[:outputTail]
		}
		t.Errorf("stitch %s reported a data race during this test:\n%s", p.name, report)
	}
}

// lazyStack starts the stack once; its zero value is ready to use.
type lazyStack struct {
	once sync.Once
	st   *stack
	err  error
}

func (l *lazyStack) get() (*stack, error) {
	l.once.Do(func() { l.st, l.err = startStack() })
	return l.st, l.err
}

func (l *lazyStack) stop() error {
	// Runs after m.Run: no test calls get concurrently any more.
	if l.st == nil {
		return nil
	}
	return l.st.stop()
}

// notImplementedError reports that a stitch subcommand is still a stub; tests skip on it.
type notImplementedError struct{ sub string }

func (e *notImplementedError) Error() string {
	return fmt.Sprintf("stitch %s not implemented yet", e.sub)
}

// stack is a running stitch serve (and the sim behind it), or an external one.
type stack struct {
	baseURL string // http://127.0.0.1:PORT, no trailing slash
	tmpDir  string // removed by stop; "" for an external stack
	bin     string // the stitch binary; "" for an external stack
	simAddr string // host:port of the sim's HTTP side; "" for an external stack
	// upstream is how serve reaches the sim: "http" (--upstream http://simAddr) or "grpc"
	// (--upstream grpc://, the sim's --grpc-listen), from STITCH_E2E_UPSTREAM; "" for an
	// external stack. Tests that start their own serve reach the sim over HTTP either way.
	upstream string
	procs    []*proc
}

// upstreamTransport is the transport STITCH_E2E_UPSTREAM names for the shared stack: "http"
// (the default) or "grpc".
func upstreamTransport() (string, error) {
	switch v := os.Getenv("STITCH_E2E_UPSTREAM"); v {
	case "", "http":
		return "http", nil
	case "grpc":
		return "grpc", nil
	default:
		return "", fmt.Errorf("STITCH_E2E_UPSTREAM=%q: want http or grpc", v)
	}
}

// startStack builds the binary and starts sim then serve, or attaches to STITCH_E2E_BASE_URL.
func startStack() (*stack, error) {
	if u := os.Getenv("STITCH_E2E_BASE_URL"); u != "" {
		st := &stack{baseURL: strings.TrimRight(u, "/")}
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		defer cancel()
		if err := waitReady(ctx, nil, st.baseURL+"/readyz"); err != nil {
			return nil, fmt.Errorf("external stack %s: %w", st.baseURL, err)
		}
		return st, nil
	}
	tmp, err := os.MkdirTemp("", "stitch-e2e-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	st := &stack{tmpDir: tmp}
	if err := st.start(); err != nil {
		// Keep what already runs from leaking; the start error is the one worth reporting.
		_ = st.stop()
		return nil, err
	}
	return st, nil
}

func (st *stack) start() error {
	st.bin = os.Getenv("STITCH_E2E_BIN")
	if st.bin == "" {
		st.bin = filepath.Join(st.tmpDir, "stitch")
		if err := buildBinary(st.bin); err != nil {
			return err
		}
	}
	var err error
	if st.upstream, err = upstreamTransport(); err != nil {
		return err
	}
	var simFlags []string
	upstreamURL := ""
	if st.upstream == "grpc" {
		grpcAddr, err := freeAddr()
		if err != nil {
			return err
		}
		simFlags, upstreamURL = []string{"--grpc-listen", grpcAddr}, "grpc://"+grpcAddr
	}
	sim, err := st.startSim(simFlags...)
	if upstreamURL == "" && sim != nil {
		upstreamURL = "http://" + sim.addr
	}
	if sim != nil {
		st.procs = append(st.procs, sim)
	}
	if err != nil {
		return err
	}
	st.simAddr = sim.addr
	dataDir := filepath.Join(st.tmpDir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	serve, err := st.startServeURL(upstreamURL, dataDir)
	if serve != nil {
		st.procs = append(st.procs, serve)
	}
	if err != nil {
		return err
	}
	st.baseURL = "http://" + serve.addr
	return nil
}

// startSim starts a `stitch sim --fast` with extra flags and waits until it is ready. The
// caller stops the returned process (also on error, when it is not nil).
func (st *stack) startSim(extra ...string) (*proc, error) {
	return startReady(st.bin, "sim", "/health", func(addr string) []string {
		return append([]string{"sim", "--listen", addr, "--fast", "--served-model-name", modelName}, extra...)
	})
}

// startServe starts a `stitch serve` in front of the sim at simAddr, storing in dataDir, and
// waits until it is ready. The caller stops the returned process (also on error, when it is
// not nil).
func (st *stack) startServe(simAddr, dataDir string) (*proc, error) {
	return st.startServeURL("http://"+simAddr, dataDir)
}

// startServeURL is startServe for an upstream URL (http://… or grpc://…).
func (st *stack) startServeURL(upstreamURL, dataDir string) (*proc, error) {
	return startReady(st.bin, "serve", "/readyz", func(addr string) []string {
		return []string{"serve", "--listen", addr, "--upstream", upstreamURL,
			"--served-model-name", modelName, "--data-dir", dataDir}
	})
}

// extraProcs starts processes for one test and stops them (logging their output when the
// test failed) at its end.
type extraProcs struct {
	t     *testing.T
	procs []*proc
}

func newExtraProcs(t *testing.T) *extraProcs {
	e := &extraProcs{t: t}
	t.Cleanup(func() {
		for i := len(e.procs) - 1; i >= 0; i-- {
			p := e.procs[i]
			if err := p.stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
			checkRace(t, p, 0)
			if t.Failed() {
				t.Logf("---- test's own stitch %s (%s) output:\n%s", p.name, p.state(), p.tail())
			}
		}
	})
	return e
}

// start runs start, keeps the process for cleanup, and fails the test on error.
func (e *extraProcs) start(what string, start func() (*proc, error)) *proc {
	e.t.Helper()
	p, err := start()
	if p != nil {
		e.procs = append(e.procs, p)
	}
	if err != nil {
		e.t.Fatalf("start %s: %v", what, err)
	}
	return p
}

// buildBinary builds the stitch command of the enclosing module into out.
func buildBinary(out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	// `go test` puts GOROOT/bin first on PATH, so "go" is the toolchain running the tests.
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if root == "." || root == "" {
		return errors.New("go env GOMOD: not inside a module")
	}
	args := []string{"build", "-o", out}
	// Opt-in: a race-built stitch starts ~10x slower (7-10 s instead of ~1 s per process).
	if os.Getenv("STITCH_E2E_RACE") == "1" {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, ".")...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build stitch in %s: %w\n%s", root, err, b)
	}
	return nil
}

// startReady starts `bin args(addr)` on a free loopback port and waits until GET probe
// answers 200. A bind race on the port chosen is retried with another port. It returns the
// process even on error (so the caller can stop it and log its output), or nil if none started.
func startReady(bin, sub, probe string, args func(addr string) []string) (*proc, error) {
	return startReadyEnv(bin, sub, probe, nil, args)
}

// startReadyEnv is startReady with env added to the process's inherited environment.
func startReadyEnv(bin, sub, probe string, env []string, args func(addr string) []string) (*proc, error) {
	const attempts = 3
	var p *proc
	var err error
	for range attempts {
		var addr string
		addr, err = freeAddr()
		if err != nil {
			return nil, err
		}
		p, err = startProcEnv(sub, bin, addr, env, args(addr))
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		err = waitReady(ctx, p, "http://"+addr+probe)
		cancel()
		if err == nil {
			return p, nil
		}
		if !p.exited() {
			return p, fmt.Errorf("stitch %s: %w\n%s", sub, err, p.tail())
		}
		if notImplemented(bin, sub, p) {
			return p, &notImplementedError{sub: sub}
		}
		if !strings.Contains(p.output(), "address already in use") {
			return p, fmt.Errorf("stitch %s: %w\n%s", sub, err, p.tail())
		}
	}
	return p, fmt.Errorf("stitch %s: no free port after %d attempts: %w", sub, attempts, err)
}

// notImplemented reports whether the exited process p is a stub of subcommand sub: exit
// code 2 with "not implemented yet", or a stub that does not even declare the contract's
// --listen flag (then flag parsing fails first, so `sub --help` is asked for its flags).
func notImplemented(bin, sub string, p *proc) bool {
	if p.exitCode() != 2 {
		return false
	}
	out := p.output()
	if strings.Contains(out, "not implemented yet") {
		return true
	}
	if !strings.Contains(out, "flag provided but not defined") {
		return false
	}
	help, _ := exec.Command(bin, sub, "--help").CombinedOutput()
	return !strings.Contains(string(help), "-listen")
}

// freeAddr returns a loopback address whose port was free a moment ago (listen :0 trick).
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find free port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("find free port: %w", err)
	}
	return addr, nil
}

// waitReady polls url until it answers 200, p exits (when p is not nil) or ctx ends.
func waitReady(ctx context.Context, p *proc, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
		}
		last = err
		var exited <-chan struct{}
		if p != nil {
			exited = p.done
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before ready (%s)", p.state())
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last probe: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// stop terminates the processes in reverse start order and removes the temp dir.
func (st *stack) stop() error {
	var errs []error
	for i := len(st.procs) - 1; i >= 0; i-- {
		if err := st.procs[i].stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if st.tmpDir != "" {
		if err := os.RemoveAll(st.tmpDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// logOutput appends the tail of every process's output to t's log.
func (st *stack) logOutput(t *testing.T) {
	t.Helper()
	for _, p := range st.procs {
		t.Logf("---- stitch %s (%s) output, last %d bytes:\n%s", p.name, p.state(), outputTail, p.tail())
	}
}

// client returns an official Go SDK client for the stack.
func (st *stack) client() openai.Client { return newClient(st.baseURL) }

// newClient returns an official Go SDK client for the stitch at baseURL. Retries are off so
// a 5xx or a dropped connection fails the test instead of being retried away.
func newClient(baseURL string) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(baseURL+"/v1/"),
		option.WithAPIKey(apiKey),
		option.WithMaxRetries(0),
	)
}

// ctx returns a context bounded by requestTimeout and cancelled when t ends.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// proc is one started stitch subprocess with its combined stdout and stderr.
type proc struct {
	name string
	addr string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed when the process has exited and waitErr is set
	// waitErr is written once before done is closed and read only after.
	waitErr error
}

func startProc(name, bin, addr string, args []string) (*proc, error) {
	return startProcEnv(name, bin, addr, nil, args)
}

// startProcEnv is startProc with env added to the inherited environment.
func startProcEnv(name, bin, addr string, env, args []string) (*proc, error) {
	p := &proc{name: name, addr: addr, out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start stitch %s: %w", name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitCode returns the exit code, or -1 while running or when killed by a signal.
func (p *proc) exitCode() int {
	if !p.exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) state() string {
	if !p.exited() {
		return "running on " + p.addr
	}
	return p.cmd.ProcessState.String()
}

func (p *proc) output() string { return p.out.String() }

func (p *proc) tail() string {
	s := p.output()
	if len(s) > outputTail {
		s = "…" + s[len(s)-outputTail:]
	}
	return s
}

// stop sends SIGTERM and waits stopTimeout for a graceful exit, then kills the process.
func (p *proc) stop() error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !p.exited() {
		return fmt.Errorf("signal stitch %s: %w", p.name, err)
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	}
	if err := p.cmd.Process.Kill(); err != nil && !p.exited() {
		return fmt.Errorf("kill stitch %s: %w", p.name, err)
	}
	<-p.done
	return fmt.Errorf("stitch %s did not exit within %v of SIGTERM; killed", p.name, stopTimeout)
}

// lockedBuffer is an io.Writer safe for the two copy goroutines of exec.Cmd and a reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
