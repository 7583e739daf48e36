package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
	"github.com/stitchllm/stitch/store/storetest"
)

var _ storetest.Artifacts = (*store.Tiered)(nil)

func newSealer(t *testing.T, now func() time.Time, keys ...store.SealKey) *store.Sealer {
	t.Helper()
	if len(keys) == 0 {
		keys = []store.SealKey{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	}
	s, err := store.NewSealer(keys, store.SealerOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newL1(t *testing.T, opts store.L1Options) *store.L1 {
	t.Helper()
	l, err := store.NewL1(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func newRedisArtifacts(t *testing.T, addr string) *store.RedisArtifacts {
	c := store.NewRedisClient(store.RedisOptions{Addrs: []string{addr}})
	t.Cleanup(func() { c.Close() })
	return store.NewRedisArtifacts(c, store.RedisArtifactsOptions{Prefix: t.Name()})
}

func TestTieredConformance(t *testing.T) {
	t.Run("L1", func(t *testing.T) {
		storetest.RunArtifacts(t, func(t *testing.T, clock *storetest.Clock) storetest.Artifacts {
			return store.NewTiered(store.TieredOptions{
				Sealer: newSealer(t, clock.Now), L1: newL1(t, store.L1Options{MaxMB: 8}), Now: clock.Now,
			})
		})
	})
	addr := redistest.Start(t)
	t.Run("L2", func(t *testing.T) {
		storetest.RunArtifacts(t, func(t *testing.T, clock *storetest.Clock) storetest.Artifacts {
			return store.NewTiered(store.TieredOptions{
				Sealer: newSealer(t, clock.Now), L2: newRedisArtifacts(t, addr), Now: clock.Now,
			})
		})
	})
	t.Run("L1+L2", func(t *testing.T) {
		storetest.RunArtifacts(t, func(t *testing.T, clock *storetest.Clock) storetest.Artifacts {
			return store.NewTiered(store.TieredOptions{
				Sealer: newSealer(t, clock.Now), L1: newL1(t, store.L1Options{MaxMB: 8}),
				L2: newRedisArtifacts(t, addr), Now: clock.Now,
			})
		})
	})
}

func TestTieredReadThrough(t *testing.T) {
	addr := redistest.Start(t)
	now := func() time.Time { return time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC) }
	sealer := newSealer(t, now)
	l2 := newRedisArtifacts(t, addr)
	// Pod A writes; pod B (its own empty L1, same L2) reads.
	podA := store.NewTiered(store.TieredOptions{Sealer: sealer, L1: newL1(t, store.L1Options{MaxMB: 1}), L2: l2, Now: now})
	l1B := newL1(t, store.L1Options{MaxMB: 1})
	podB := store.NewTiered(store.TieredOptions{Sealer: sealer, L1: l1B, L2: l2, Now: now})
	if err := podA.Put(t.Context(), storetest.SampleArtifact("acme", "resp_1", 100, now())); err != nil {
		t.Fatal(err)
	}
	if _, tier, err := podA.Get(t.Context(), "acme", "resp_1"); err != nil || tier != store.TierLocal {
		t.Errorf("pod A Get = %q, %v; want local", tier, err)
	}
	if _, tier, err := podB.Get(t.Context(), "acme", "resp_1"); err != nil || tier != store.TierPortable {
		t.Errorf("pod B first Get = %q, %v; want portable", tier, err)
	}
	if _, tier, err := podB.Get(t.Context(), "acme", "resp_1"); err != nil || tier != store.TierLocal {
		t.Errorf("pod B second Get = %q, %v; want local (filled on read)", tier, err)
	}
	st := podB.Stats()
	if st.L2Hits != 1 || st.L1.Hits != 1 || st.L1.Entries != 1 {
		t.Errorf("pod B stats = %+v; want 1 L2 hit, 1 L1 hit, 1 entry", st)
	}
}

func TestTieredRedisDownAndBack(t *testing.T) {
	srv := redistest.StartServer(t)
	now := func() time.Time { return time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC) }
	sealer := newSealer(t, now)
	l2 := newRedisArtifacts(t, srv.Addr)
	tiered := store.NewTiered(store.TieredOptions{Sealer: sealer, L1: newL1(t, store.L1Options{MaxMB: 1}), L2: l2, Now: now})
	l2only := store.NewTiered(store.TieredOptions{Sealer: sealer, L2: l2, Now: now})

	srv.Stop()
	a := storetest.SampleArtifact("acme", "resp_1", 100, now())
	if err := tiered.Put(t.Context(), a); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Put with Redis down = %v, want ErrUnavailable", err)
	}
	// The L1 write happened anyway.
	if _, tier, err := tiered.Get(t.Context(), "acme", "resp_1"); err != nil || tier != store.TierLocal {
		t.Errorf("Get after failed L2 put = %q, %v; want local hit", tier, err)
	}
	// An L1 miss with L2 down is a classified, prompt error.
	if _, _, err := l2only.Get(t.Context(), "acme", "resp_1"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("L2 Get with Redis down = %v, want ErrUnavailable", err)
	}
	if st := l2only.Stats(); st.L2Errors != 1 {
		t.Errorf("L2Errors = %d, want 1", st.L2Errors)
	}

	srv.Restart()
	waitFor(t, func() error { return l2only.Put(context.Background(), a) })
	if _, tier, err := l2only.Get(t.Context(), "acme", "resp_1"); err != nil || tier != store.TierPortable {
		t.Errorf("L2 Get after recovery = %q, %v; want portable hit", tier, err)
	}
}

func TestTieredL2Timeout(t *testing.T) {
	// A listener that accepts and never answers: the L2 timeout must turn it
	// into ErrUnavailable, not a hang.
	addr := silentServer(t)
	now := func() time.Time { return time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC) }
	c := store.NewRedisClient(store.RedisOptions{Addrs: []string{addr}, ReadTimeout: 5 * time.Second, MaxRetries: -1})
	defer c.Close()
	tiered := store.NewTiered(store.TieredOptions{
		Sealer: newSealer(t, now), L2: store.NewRedisArtifacts(c, store.RedisArtifactsOptions{}),
		L2Timeout: 50 * time.Millisecond, Now: now,
	})
	if _, _, err := tiered.Get(t.Context(), "acme", "resp_1"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Get from a silent Redis = %v, want ErrUnavailable", err)
	}
	// The caller's own cancellation is reported as such.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := tiered.Get(ctx, "acme", "resp_1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with cancelled ctx = %v, want context.Canceled", err)
	}
}

func TestTieredRejectsWrongResponseID(t *testing.T) {
	// An artifact copied under another id (same tenant) must not be used.
	now := func() time.Time { return time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC) }
	sealer := newSealer(t, now)
	l1 := newL1(t, store.L1Options{MaxMB: 1})
	tiered := store.NewTiered(store.TieredOptions{Sealer: sealer, L1: l1, Now: now})
	sealed, err := sealer.SealArtifact(storetest.SampleArtifact("acme", "resp_1", 10, now()))
	if err != nil {
		t.Fatal(err)
	}
	if err := l1.Set("acme", "resp_2", sealed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tiered.Get(t.Context(), "acme", "resp_2"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Get(copied artifact) = %v, want ErrInvalid", err)
	}
	if _, ok := l1.Get("acme", "resp_2"); ok {
		t.Errorf("invalid L1 entry was not dropped")
	}
	if st := tiered.Stats(); st.Invalid != 1 {
		t.Errorf("Invalid = %d, want 1", st.Invalid)
	}
}

func TestTieredPutTooLargeForL1(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC) }
	big := storetest.SampleArtifact("acme", "resp_big", 5000, now())
	l1only := store.NewTiered(store.TieredOptions{Sealer: newSealer(t, now), L1: newL1(t, store.L1Options{MaxMB: 1, MaxEntryBytes: 4096}), Now: now})
	if err := l1only.Put(t.Context(), big); err == nil {
		t.Errorf("L1-only Put of an artifact over the entry limit = nil, want an error (stored nowhere)")
	}
	both := store.NewTiered(store.TieredOptions{Sealer: newSealer(t, now), L1: newL1(t, store.L1Options{MaxMB: 1, MaxEntryBytes: 4096}),
		L2: &fakeL2{m: map[string][]byte{}}, Now: now})
	if err := both.Put(t.Context(), big); err != nil {
		t.Errorf("Put of an artifact over the L1 entry limit with L2 = %v, want nil (L2 holds it)", err)
	}
	if _, tier, err := both.Get(t.Context(), "acme", "resp_big"); err != nil || tier != store.TierPortable {
		t.Errorf("Get = %q, %v; want portable", tier, err)
	}
	if st := both.Stats(); st.L1.TooLarge != 2 {
		t.Errorf("L1 TooLarge = %d, want 2 (put, then read-through fill)", st.L1.TooLarge)
	}
}
