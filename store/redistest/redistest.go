// Package redistest runs a throwaway redis-server for tests.
//
// Each server is a subprocess on a free loopback port with persistence off
// (StartPersistent: AOF on), killed in t.Cleanup. Tests skip when redis-server is not on PATH, except
// under CI=true, where they fail: CI must exercise the Redis backends.
package redistest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Start starts a redis-server for the test and returns its address
// (127.0.0.1:port). It is killed when the test ends.
func Start(t testing.TB) string {
	t.Helper()
	return StartServer(t).Addr
}

// Server is a running redis-server subprocess. Methods must be called from the
// test goroutine (or with external synchronisation).
type Server struct {
	// Addr is host:port; it stays the same across Stop and Restart.
	Addr string

	t    testing.TB
	bin  string
	port int
	dir  string
	aof  bool // appendonly with fsync always: a restart keeps every write

	mu   sync.Mutex
	proc *proc
}

type proc struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// StartServer starts a redis-server for the test, for tests that need to stop
// and restart it. It is killed when the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	return startServer(t, false)
}

// StartPersistent is StartServer with AOF persistence (appendfsync always):
// Restart brings back every acknowledged write, as a production Redis with AOF
// does, and a new run_id.
func StartPersistent(t testing.TB) *Server {
	t.Helper()
	return startServer(t, true)
}

func startServer(t testing.TB, aof bool) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not on PATH (required under CI=true): %v", err)
		}
		t.Skipf("redis-server not on PATH; install it (apt-get install redis-server) to run this test: %v", err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), aof: aof}
	t.Cleanup(s.Stop)
	var lastErr error
	// A free port found by listening on :0 can be taken by someone else before
	// redis binds it; try a few.
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: find free port: %v", err)
		}
		s.port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.start(); lastErr == nil {
			return s
		}
	}
	t.Fatalf("redistest: start redis-server: %v", lastErr)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stop kills the server and waits for it to exit. Stopping a stopped server
// does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Restart starts the server again on the same address (empty: persistence is
// off). It fails the test if the server does not come up.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: restart redis-server on %s: %v", s.Addr, err)
	}
}

// Pause stops the server with SIGSTOP: connections stay open and nothing is
// answered, as a Redis stalled by a fork, swapping or a long command. Resume
// continues it. A paused server is resumed at cleanup (before Stop).
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		s.t.Fatalf("redistest: signal %v: server %s not running", sig, s.Addr)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signal %v: %v", sig, err)
	}
}

func (s *Server) start() error {
	appendonly := "no"
	if s.aof {
		appendonly = "yes"
	}
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", appendonly,
		"--appendfsync", "always",
		"--dir", s.dir,
		"--protected-mode", "no",
	)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &proc{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	if err := waitReady(s.Addr, p.exited); err != nil {
		_ = cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%w; output:\n%s", err, out.String())
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// waitReady polls until the server answers PING with PONG, the process
// exits, or 15 seconds pass (a loaded machine can be slow to fork).
func waitReady(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(15 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited before answering on %s", addr)
		default:
		}
		if lastErr = ping(addr); lastErr == nil {
			return nil
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Millisecond):
		}
	}
	return fmt.Errorf("redis-server on %s not ready: %v", addr, lastErr)
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
