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

// TestCheckpointCollector: the checkpoint counters move when the events
// happen (here an item diverted by a reused id).
func TestCheckpointCollector(t *testing.T) {
	m := store.NewMemory()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(store.NewCheckpointCollector(m))
	cp1, items1 := storetest.Sample("acme", "resp_1")
	cp2, items2 := storetest.Sample("acme", "resp_2")
	items2[0].ID, cp2.InputItemIDs[0] = items1[0].ID, items1[0].ID
	cp2.ConversationItemIDs[0] = items1[0].ID
	items2[0].Data = []byte(`{"other":true}`)
	for _, p := range []struct {
		cp    *store.Checkpoint
		items []store.Item
	}{{cp1, items1}, {cp2, items2}} {
		if err := m.PutResponse(t.Context(), p.cp, p.items); err != nil {
			t.Fatal(err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			v := mt.GetCounter().GetValue() + mt.GetGauge().GetValue()
			name := f.GetName()
			for _, l := range mt.GetLabel() {
				name += "/" + l.GetValue()
			}
			got[name] = v
		}
	}
	want := map[string]float64{
		"stitch_checkpoint_corrupt_total": 0, "stitch_checkpoint_items_diverted_total": 1,
		"stitch_checkpoint_replay_queued": 0, "stitch_checkpoint_replayed_total/ok": 0,
		"stitch_checkpoint_replayed_total/dropped": 0, "stitch_checkpoint_republished_total": 0,
		"stitch_checkpoint_local_reads_total": 0, "stitch_checkpoint_deletions_followed_total": 0,
		"stitch_checkpoint_unproven_misses_total": 0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checkpoint metrics (-want +got):\n%s", diff)
	}
}
