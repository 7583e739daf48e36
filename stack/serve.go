package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Serve serves the stack's server on ln until ctx ends, then shuts down gracefully: it stops
// accepting and lets open streams finish, then drains background responses (Server.Shutdown),
// both within timeout; the drain fails those still running then. It does not Close the stack.
func (s *Stack) Serve(ctx context.Context, ln net.Listener, timeout time.Duration) error {
	hs := &http.Server{Handler: s.Server, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.logger.Info("shutting down", "timeout", timeout)
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	herr := hs.Shutdown(sctx)
	if err := s.Server.Shutdown(sctx); err != nil {
		s.logger.Warn("shutdown: background responses", "err", err)
	}
	if herr != nil {
		return fmt.Errorf("shutdown: %w", herr)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
