//go:build unix

package redistest

import "syscall"

// Pause stops the server process (SIGSTOP): connections stay open but nothing is answered, as
// in a stall (a fork for a snapshot, a paused VM). Resume continues it. Pausing a stopped server
// does nothing.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signal %v to redis-server on %s: %v", sig, s.Addr, err)
	}
}
