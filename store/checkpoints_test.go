package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
	"github.com/stitchllm/stitch/store/storetest"
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

func TestBoltWithRetentionConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Checkpoints {
		s, err := store.OpenBolt(t.TempDir(), store.BoltOptions{Retention: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
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

func TestBoltSweep(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC))
	s, err := store.OpenBolt(t.TempDir(), store.BoltOptions{Retention: time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cp1, items1 := storetest.Sample("acme", "resp_1")
	if err := s.PutResponse(t.Context(), cp1, items1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(50 * time.Minute)
	// resp_2 continues resp_1: it references resp_1's items, refreshing them.
	cp2, items2 := storetest.Sample("acme", "resp_2")
	cp2.ConversationItemIDs = append(append([]string{}, cp1.ConversationItemIDs...), cp2.ConversationItemIDs...)
	if err := s.PutResponse(t.Context(), cp2, items2); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Minute)
	n, err := s.Sweep(t.Context())
	if err != nil || n != 1 {
		t.Errorf("Sweep at +70m = %d, %v; want 1 (resp_1 only)", n, err)
	}
	if _, err := s.GetResponse(t.Context(), "acme", "resp_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetResponse(resp_1) after sweep = %v, want ErrNotFound", err)
	}
	if _, err := s.GetItems(t.Context(), "acme", cp2.ConversationItemIDs); err != nil {
		t.Errorf("resp_2's conversation after sweep: %v", err)
	}
	clock.Advance(time.Hour)
	n, err = s.Sweep(t.Context())
	if want := 1 + len(cp2.ConversationItemIDs); err != nil || n != want {
		t.Errorf("Sweep at +130m = %d, %v; want %d", n, err, want)
	}
	if _, err := s.GetItems(t.Context(), "acme", cp1.InputItemIDs); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetItems after full sweep = %v, want ErrNotFound", err)
	}
}

func TestBoltSweepWithoutRetention(t *testing.T) {
	s := openBolt(t, t.TempDir())
	defer s.Close()
	cp, items := storetest.Sample("acme", "resp_1")
	if err := s.PutResponse(t.Context(), cp, items); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(t.Context()); n != 0 || err != nil {
		t.Errorf("Sweep without retention = %d, %v; want 0, nil", n, err)
	}
}
