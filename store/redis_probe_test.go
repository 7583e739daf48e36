package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
)

// TestRedisProbe: a Redis that answers no commands (SIGSTOP) fails the probe within its
// timeout; resumed, the probe passes again once its cached answer expired.
func TestRedisProbe(t *testing.T) {
	srv := redistest.StartServer(t)
	c := store.NewRedisClient(store.RedisOptions{Addrs: []string{srv.Addr}})
	t.Cleanup(func() { c.Close() })
	p := store.NewRedisProbe(c, 200*time.Millisecond, 50*time.Millisecond)
	if err := p.Check(t.Context()); err != nil {
		t.Fatalf("healthy Redis: %v", err)
	}
	srv.Pause()
	waitFor(t, func() error {
		if err := p.Check(t.Context()); err == nil {
			return errors.New("probe still passes with Redis paused")
		}
		return nil
	})
	srv.Resume()
	waitFor(t, func() error { return p.Check(context.Background()) })
}
