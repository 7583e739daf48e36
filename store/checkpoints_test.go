package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
	"github.com/stitchllm/stitch/store/storetest"
)

var (
	_ storetest.Checkpoints = (*store.Bolt)(nil)
	_ storetest.Checkpoints = (*store.RedisCheckpoints)(nil)
	_ storetest.Checkpoints = (*store.Memory)(nil)
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Checkpoints { return store.NewMemory() })
}

func openBolt(t *testing.T, dir string) *store.Bolt {
	t.Helper()
	s, err := store.OpenBolt(dir, store.BoltOptions{})
	if err != nil {
		t.Fatalf("OpenBolt(%s) = %v", dir, err)
	}
	return s
}

func TestBoltConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Checkpoints {
		s := openBolt(t, t.TempDir())
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestRedisCheckpointsConformance(t *testing.T) {
	addr := redistest.Start(t)
	c := store.NewRedisClient(store.RedisOptions{Addrs: []string{addr}})
	t.Cleanup(func() { c.Close() })
	prefix := 0
	storetest.Run(t, func(t *testing.T) storetest.Checkpoints {
		// One server for the suite; a fresh key prefix gives each subtest an
		// empty store.
		prefix++
		return store.NewRedisCheckpoints(c, store.RedisCheckpointsOptions{Prefix: fmt.Sprintf("t%d", prefix)})
	})
}

func TestBoltSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := openBolt(t, dir)
	cp, items := storetest.Sample("acme", "resp_1")
	if err := s.PutResponse(t.Context(), cp, items); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetResponse(t.Context(), "acme", "resp_1"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("GetResponse after Close = %v, want ErrClosed", err)
	}

	s = openBolt(t, dir)
	defer s.Close()
	got, err := s.GetResponse(t.Context(), "acme", "resp_1")
	if err != nil {
		t.Fatalf("GetResponse after reopen = %v", err)
	}
	if diff := cmp.Diff(cp, got); diff != "" {
		t.Errorf("checkpoint after reopen (-put +got):\n%s", diff)
	}
	gotItems, err := s.GetItems(t.Context(), "acme", got.ConversationItemIDs)
	if err != nil {
		t.Fatalf("GetItems after reopen = %v", err)
	}
	if diff := cmp.Diff(items, gotItems); diff != "" {
		t.Errorf("items after reopen (-put +got):\n%s", diff)
	}
}

func TestRedisCheckpointsUnavailableThenRecover(t *testing.T) {
	srv := redistest.StartServer(t)
	c := store.NewRedisClient(store.RedisOptions{Addrs: []string{srv.Addr}})
	defer c.Close()
	s := store.NewRedisCheckpoints(c, store.RedisCheckpointsOptions{})
	cp, items := storetest.Sample("acme", "resp_1")
	if err := s.PutResponse(t.Context(), cp, items); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	if err := s.PutResponse(t.Context(), cp, items); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("PutResponse with Redis down = %v, want ErrUnavailable", err)
	}
	if _, err := s.GetResponse(t.Context(), "acme", "resp_1"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("GetResponse with Redis down = %v, want ErrUnavailable", err)
	}

	// Same client, new (empty) server on the same address.
	srv.Restart()
	waitFor(t, func() error { return s.PutResponse(context.Background(), cp, items) })
	if _, err := s.GetResponse(t.Context(), "acme", "resp_1"); err != nil {
		t.Errorf("GetResponse after recovery = %v", err)
	}
}
