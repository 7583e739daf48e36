package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

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

func TestRedisCheckpointsSealedConformance(t *testing.T) {
	addr := redistest.Start(t)
	c := store.NewRedisClient(store.RedisOptions{Addrs: []string{addr}})
	t.Cleanup(func() { c.Close() })
	sealer := newSealer(t, nil)
	prefix := 0
	storetest.Run(t, func(t *testing.T) storetest.Checkpoints {
		prefix++
		return store.NewRedisCheckpoints(c, store.RedisCheckpointsOptions{Prefix: fmt.Sprintf("s%d", prefix), Sealer: sealer})
	})
}

// TestFallbackConformance: the Fallback over a healthy Redis and a Bolt file
// keeps the same contract as each store alone.
func TestFallbackConformance(t *testing.T) {
	addr := redistest.Start(t)
	c := store.NewRedisClient(store.RedisOptions{Addrs: []string{addr}})
	t.Cleanup(func() { c.Close() })
	sealer := newSealer(t, nil)
	prefix := 0
	storetest.Run(t, func(t *testing.T) storetest.Checkpoints {
		prefix++
		shared := store.NewRedisCheckpoints(c, store.RedisCheckpointsOptions{Prefix: fmt.Sprintf("f%d", prefix), Sealer: sealer})
		local := openBolt(t, t.TempDir())
		f := store.NewFallback(shared, local, store.FallbackOptions{SyncInterval: -1})
		t.Cleanup(func() {
			f.Close()
			local.Close()
		})
		// A pod proves misses once it holds a lease (its loop syncs at start).
		if err := f.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		return f
	})
}

// TestRedisCheckpointsCorruptValues: whatever sits under a checkpoint's or
// an item's key — garbage, another tenant's sealed record, an unsealed
// record where seals are required — reads as not found (ErrCorrupt) and is
// counted, never returned and never an ErrUnavailable/500.
func TestRedisCheckpointsCorruptValues(t *testing.T) {
	addr := redistest.Start(t)
	c := store.NewRedisClient(store.RedisOptions{Addrs: []string{addr}})
	defer c.Close()
	ctx := t.Context()
	sealed := store.NewRedisCheckpoints(c, store.RedisCheckpointsOptions{Prefix: "p", Sealer: newSealer(t, nil)})
	plain := store.NewRedisCheckpoints(c, store.RedisCheckpointsOptions{Prefix: "p"})
	for _, tenant := range []string{"acme", "evil"} {
		cp, items := storetest.Sample(tenant, "resp_1")
		if err := sealed.PutResponse(ctx, cp, items); err != nil {
			t.Fatal(err)
		}
	}
	cpPlain, itemsPlain := storetest.Sample("acme", "resp_plain")
	if err := plain.PutResponse(ctx, cpPlain, itemsPlain); err != nil {
		t.Fatal(err)
	}
	evilRecord, err := c.Get(ctx, "p:{evil}:resp:resp_1").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	goodItem, err := c.Get(ctx, "p:{acme}:item:msg_in_resp_1").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, key string
		value     []byte
		read      func() error
	}{
		{"garbage record", "p:{acme}:resp:resp_g", []byte("\x00garbage{"), func() error {
			_, err := sealed.GetResponse(ctx, "acme", "resp_g")
			return err
		}},
		{"another tenant's sealed record", "p:{acme}:resp:resp_1", evilRecord, func() error {
			_, err := sealed.GetResponse(ctx, "acme", "resp_1")
			return err
		}},
		{"unsealed record", "", nil, func() error {
			_, err := sealed.GetResponse(ctx, "acme", "resp_plain")
			return err
		}},
		{"garbage record, unsealed store", "p:{acme}:resp:resp_g2", []byte(`{"v":1,"id":`), func() error {
			_, err := plain.GetResponse(ctx, "acme", "resp_g2")
			return err
		}},
		{"garbage item", "p:{acme}:item:msg_out_resp_1", []byte("not json"), func() error {
			_, err := sealed.GetItems(ctx, "acme", []string{"msg_in_resp_1", "msg_out_resp_1"})
			return err
		}},
		{"item moved to another id", "p:{acme}:item:fc_resp_1", goodItem, func() error {
			_, err := sealed.GetItems(ctx, "acme", []string{"fc_resp_1"})
			return err
		}},
		{"invalid JSON item, unsealed store", "p:{acme}:item:msg_in_resp_plain", []byte(`{"type":`), func() error {
			_, err := plain.GetItems(ctx, "acme", []string{"msg_in_resp_plain"})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.key != "" {
				if err := c.Set(ctx, tt.key, tt.value, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			before := sealed.CheckpointStats().Corrupt + plain.CheckpointStats().Corrupt
			err := tt.read()
			if !errors.Is(err, store.ErrNotFound) || !errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrUnavailable) {
				t.Errorf("read = %v, want ErrNotFound and ErrCorrupt", err)
			}
			if after := sealed.CheckpointStats().Corrupt + plain.CheckpointStats().Corrupt; after != before+1 {
				t.Errorf("corrupt count %d -> %d, want +1", before, after)
			}
		})
	}
}

// TestBoltCorruptValues: a damaged record or item in the file reads as not
// found (ErrCorrupt), counted; invalid JSON is never returned.
func TestBoltCorruptValues(t *testing.T) {
	dir := t.TempDir()
	s := openBolt(t, dir)
	cp, items := storetest.Sample("acme", "resp_1")
	if err := s.PutResponse(t.Context(), cp, items); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bolt.Open(filepath.Join(dir, "checkpoints.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("items")).Put([]byte("acme\x00"+items[0].ID), []byte(`{"type":"message","content":[`)); err != nil {
			return err
		}
		return tx.Bucket([]byte("responses")).Put([]byte("acme\x00resp_g"), []byte("garbage"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s = openBolt(t, dir)
	defer s.Close()
	_, err = s.GetItems(t.Context(), "acme", cp.ConversationItemIDs)
	if !errors.Is(err, store.ErrNotFound) || !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("GetItems(corrupt item) = %v, want ErrNotFound and ErrCorrupt", err)
	}
	_, err = s.GetResponse(t.Context(), "acme", "resp_g")
	if !errors.Is(err, store.ErrNotFound) || !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("GetResponse(garbage record) = %v, want ErrNotFound and ErrCorrupt", err)
	}
	if n := s.CheckpointStats().Corrupt; n != 2 {
		t.Errorf("corrupt count = %d, want 2", n)
	}
	if _, err := s.GetItems(t.Context(), "acme", cp.OutputItemIDs); err != nil {
		t.Errorf("the intact items: %v", err)
	}
}

// TestBoltSecondProcessSameDir: a second opener of the same --data-dir
// fails with a message naming the file and the lock, not just "timeout".
func TestBoltSecondProcessSameDir(t *testing.T) {
	dir := t.TempDir()
	first := openBolt(t, dir)
	defer first.Close()
	_, err := store.OpenBolt(dir, store.BoltOptions{OpenTimeout: 50 * time.Millisecond})
	if err == nil {
		t.Fatal("second OpenBolt on the same directory succeeded")
	}
	msg := err.Error()
	for _, want := range []string{filepath.Join(dir, "checkpoints.db"), "locked by another process", "--data-dir"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}
