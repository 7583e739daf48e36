package stack

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

type countingSweeper struct {
	calls atomic.Int64
	done  chan struct{}
	err   error
}

func (s *countingSweeper) Sweep(context.Context) (int, error) {
	if s.calls.Add(1) == 3 {
		close(s.done)
	}
	return 1, s.err
}

// TestSweepEvery: the embedded store is swept at start and at every tick, and the loop ends with
// its context; a failing sweep is logged, not fatal.
func TestSweepEvery(t *testing.T) {
	for _, sweepErr := range []error{nil, errors.New("disk full")} {
		s := &countingSweeper{done: make(chan struct{}), err: sweepErr}
		ticks := make(chan time.Time)
		ctx, cancel := context.WithCancel(t.Context())
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			sweepEvery(ctx, slog.New(slog.DiscardHandler), s, ticks)
		}()
		ticks <- time.Time{}
		ticks <- time.Time{}
		<-s.done
		cancel()
		<-ended
		if n := s.calls.Load(); n != 3 {
			t.Fatalf("%d sweeps, want 3 (start and two ticks)", n)
		}
	}
}
