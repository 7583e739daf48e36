package store_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/storetest"
)

func TestL1StaysWithinCap(t *testing.T) {
	n := 1_000_000
	if raceEnabled || testing.Short() {
		n = 100_000
	}
	const capMB = 16
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	sealer := newSealer(t, func() time.Time { return now })
	// A handful of real, small sealed artifacts (5-150 ids) reused under a million
	// keys: L1 stores opaque bytes, so sealing each one would only cost time.
	var values [][]byte
	for i, ids := range []int{5, 20, 60, 150} {
		v, err := sealer.SealArtifact(storetest.SampleArtifact("acme", "resp_"+strconv.Itoa(i), ids, now))
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, v)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	l := newL1(t, store.L1Options{MaxMB: capMB, MaxEntryBytes: 64 << 10})
	capBytes := capMB << 20
	var putBytes int
	for i := range n {
		v := values[i%len(values)]
		if err := l.Set("acme", "resp_"+strconv.Itoa(i), v); err != nil {
			t.Fatalf("Set #%d (%d bytes) = %v", i, len(v), err)
		}
		putBytes += len(v)
		if i%10_000 == 0 {
			if c := l.Stats().CapacityBytes; c > capBytes {
				t.Fatalf("after %d sets, L1 holds %d bytes, over the %d-byte cap", i+1, c, capBytes)
			}
		}
	}
	st := l.Stats()
	if st.CapacityBytes > capBytes {
		t.Errorf("L1 capacity %d bytes, over the %d-byte cap", st.CapacityBytes, capBytes)
	}
	if st.Sets != uint64(n) || st.EvictedNoSpace == 0 || st.Entries+int(st.EvictedNoSpace) != n {
		t.Errorf("stats %+v: want %d sets = entries + no-space evictions", st, n)
	}
	// The most recent entries are present, the oldest evicted.
	if _, ok := l.Get("acme", "resp_"+strconv.Itoa(n-1)); !ok {
		t.Errorf("newest entry missing")
	}
	if _, ok := l.Get("acme", "resp_0"); ok {
		t.Errorf("oldest entry still present after %d MB of writes", putBytes>>20)
	}

	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Heap growth: the cap, plus the index and write buffers, far below the
	// bytes written.
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if limit := int64(capBytes + 8<<20); growth > limit {
		t.Errorf("heap grew %d bytes after writing %d bytes into a %d-byte L1; want <= %d", growth, putBytes, capBytes, limit)
	}
	t.Logf("%d sets, %d MB written, %d entries kept, %d shards, heap growth %.1f MB, evicted no_space=%d",
		n, putBytes>>20, st.Entries, st.Shards, float64(growth)/(1<<20), st.EvictedNoSpace)
	runtime.KeepAlive(l)
}

func TestL1Basics(t *testing.T) {
	l := newL1(t, store.L1Options{MaxMB: 1, MaxEntryBytes: 1024})
	if _, ok := l.Get("acme", "resp_1"); ok {
		t.Fatal("Get on empty cache reported present")
	}
	if err := l.Set("acme", "resp_1", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	v, ok := l.Get("acme", "resp_1")
	if !ok || string(v) != "v1" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	v[0] = 'X' // returned bytes are the caller's
	if v, _ := l.Get("acme", "resp_1"); string(v) != "v1" {
		t.Errorf("Get returned aliased bytes: %q", v)
	}
	if _, ok := l.Get("evil", "resp_1"); ok {
		t.Errorf("another tenant's key hit")
	}
	if err := l.Set("acme", "big", make([]byte, 1025)); err == nil {
		t.Errorf("Set over MaxEntryBytes succeeded")
	}
	l.Delete("acme", "resp_1")
	l.Delete("acme", "resp_1")
	if _, ok := l.Get("acme", "resp_1"); ok {
		t.Errorf("deleted entry present")
	}
	st := l.Stats()
	want := store.L1Stats{Entries: 0, CapacityBytes: st.CapacityBytes, Shards: st.Shards, Hits: 2, Misses: 3,
		Sets: 1, TooLarge: 1, Deleted: 1}
	if st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
}

func TestL1ShardSizing(t *testing.T) {
	tests := []struct {
		maxMB, maxEntry, wantShards int
	}{
		{1, 0, 1},            // tiny cap: one shard, entries up to 512 KiB
		{256, 0, 64},         // 1 MiB entries: two per shard of 4 MiB
		{256, 64 << 10, 256}, // small entries: capped at 256 shards
		{8, 64 << 10, 32},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%dMB/%d", tt.maxMB, tt.maxEntry), func(t *testing.T) {
			l := newL1(t, store.L1Options{MaxMB: tt.maxMB, MaxEntryBytes: tt.maxEntry})
			st := l.Stats()
			if st.Shards != tt.wantShards {
				t.Errorf("Shards = %d, want %d", st.Shards, tt.wantShards)
			}
			if st.CapacityBytes > tt.maxMB<<20 {
				t.Errorf("CapacityBytes = %d over the cap", st.CapacityBytes)
			}
			// The largest allowed entry fits.
			maxEntry := tt.maxEntry
			if maxEntry == 0 {
				maxEntry = min(1<<20, tt.maxMB<<20/2)
			}
			if err := l.Set("acme", "big", make([]byte, maxEntry)); err != nil {
				t.Errorf("Set(max entry %d bytes) = %v", maxEntry, err)
			}
		})
	}
}
