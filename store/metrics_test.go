package store_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/storetest"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// fakeL2 is an in-memory PortableCache whose Get can be made to fail.
type fakeL2 struct {
	m    map[string][]byte
	fail error
}

func (f *fakeL2) Get(_ context.Context, tenant, id string) ([]byte, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	v, ok := f.m[tenant+"/"+id]
	if !ok {
		return nil, store.ErrNotFound
	}
	return v, nil
}

func (f *fakeL2) Set(_ context.Context, tenant, id string, v []byte, _ time.Duration) error {
	f.m[tenant+"/"+id] = v
	return nil
}

func (f *fakeL2) Delete(_ context.Context, tenant, id string) error {
	delete(f.m, tenant+"/"+id)
	return nil
}

func TestCollectorGolden(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	clock := storetest.NewClock(now)
	l2 := &fakeL2{m: map[string][]byte{}}
	tiered := store.NewTiered(store.TieredOptions{
		Sealer: newSealer(t, clock.Now), L1: newL1(t, store.L1Options{MaxMB: 1, MaxEntryBytes: 4096}), L2: l2, Now: clock.Now,
	})
	ctx := t.Context()
	// A scripted sequence touching every counter once or twice.
	_ = tiered.Put(ctx, storetest.SampleArtifact("acme", "resp_1", 10, now))     // L1 set ok
	_ = tiered.Put(ctx, storetest.SampleArtifact("acme", "resp_big", 5000, now)) // L1 too large, L2 only
	_, _, _ = tiered.Get(ctx, "acme", "resp_1")                                  // L1 hit
	_, _, _ = tiered.Get(ctx, "acme", "resp_big")                                // L1 miss, L2 hit, L1 fill fails
	_, _, _ = tiered.Get(ctx, "acme", "resp_none")                               // L1 miss, L2 miss
	l2.fail = store.ErrUnavailable
	_, _, _ = tiered.Get(ctx, "acme", "resp_none") // L1 miss, L2 error
	clock.Advance(2 * time.Hour)
	_, _, _ = tiered.Get(ctx, "acme", "resp_1") // L1 hit, expired, deleted

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(store.NewCollector(tiered))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	golden := filepath.Join("testdata", "metrics.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./store -run TestCollectorGolden -update)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("metrics mismatch (-golden +got; -update to accept):\n%s", diff)
	}
}
