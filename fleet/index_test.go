package fleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents/engineadapter"

	"github.com/stitchllm/stitch/fleet"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/sim/simtest"
)

// TestEncodedBatchParsesWithLLMDAdapter: the simulator's msgpack batches decode with llm-d's own
// vLLM engine adapter into the events that were encoded, field by field.
func TestEncodedBatchParsesWithLLMDAdapter(t *testing.T) {
	t.Parallel()
	evs := []sim.KVEvent{
		sim.BlockStored{BlockHashes: []uint64{1 << 63, 7}, TokenIDs: seq(0, 8), BlockSize: 4, ExtraKeys: [][]string{{"salt-a"}, nil}},
		sim.BlockStored{BlockHashes: []uint64{9}, ParentHash: 7, HasParent: true, TokenIDs: seq(8, 4), BlockSize: 4, LoRAName: "ad", ExtraKeys: [][]string{{"ad"}}},
		sim.BlockRemoved{BlockHashes: []uint64{1 << 63}},
		sim.AllBlocksCleared{},
	}
	payload, err := sim.EncodeKVEventBatch(12.5, evs)
	if err != nil {
		t.Fatal(err)
	}
	pod, model, batch, err := engineadapter.NewVLLMAdapter().ParseMessage(&kvevents.RawMessage{Topic: sim.KVEventsTopic("10.0.0.1:8000", "qwen3"), Payload: payload})
	if err != nil {
		t.Fatalf("ParseMessage: %v", err)
	}
	if pod != "10.0.0.1:8000" || model != "qwen3" || batch.Timestamp != 12.5 || len(batch.Events) != 4 {
		t.Fatalf("pod %q model %q ts %v events %d", pod, model, batch.Timestamp, len(batch.Events))
	}
	s0 := batch.Events[0].(*kvevents.BlockStoredEvent)
	if fmt.Sprint(s0.BlockHashes, s0.ParentHash, s0.Tokens, s0.BlockSize, s0.DeviceTier, s0.LoraName, s0.ExtraKeys) !=
		fmt.Sprint([]uint64{1 << 63, 7}, 0, seq(0, 8), 4, "GPU", (*string)(nil), [][]any{{"salt-a"}, nil}) {
		t.Errorf("first BlockStored = %+v", s0)
	}
	s1 := batch.Events[1].(*kvevents.BlockStoredEvent)
	if s1.ParentHash != 7 || s1.LoraName == nil || *s1.LoraName != "ad" || fmt.Sprint(s1.ExtraKeys) != "[[ad]]" {
		t.Errorf("second BlockStored = %+v", s1)
	}
	if r := batch.Events[2].(*kvevents.BlockRemovedEvent); fmt.Sprint(r.BlockHashes, r.DeviceTier) != fmt.Sprint([]uint64{1 << 63}, "GPU") {
		t.Errorf("BlockRemoved = %+v", r)
	}
	if _, ok := batch.Events[3].(*kvevents.AllBlocksClearedEvent); !ok {
		t.Errorf("last event %T", batch.Events[3])
	}
}

func seq(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

// replica is a simulator publishing its KV events on a bound loopback ZMQ socket.
type replica struct {
	pod string
	url string
	pub *sim.ZMQPublisher
}

func startReplica(t *testing.T, pod string, kvBlocks int) *replica {
	t.Helper()
	pub, err := sim.NewZMQPublisher(t.Context(), sim.ZMQPublisherOptions{Endpoint: "tcp://127.0.0.1:0", Bind: true, Topic: sim.KVEventsTopic(pod, "qwen3")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	s, err := sim.New(sim.Options{Tokenizer: simtest.ByteTokenizer{}, Fast: true, KVEvents: pub, KVBlocks: kvBlocks, ServedModelName: "qwen3"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return &replica{pod: pod, url: ts.URL, pub: pub}
}

func (r *replica) complete(t *testing.T, prompt []uint32, salt string) {
	t.Helper()
	body := map[string]any{"model": "qwen3", "prompt": prompt, "max_tokens": 3, "temperature": 0}
	if salt != "" {
		body["cache_salt"] = salt
	}
	post(t, r.url+"/v1/completions", body)
}

func post(t *testing.T, url string, body any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d", url, resp.StatusCode)
	}
}

// subscribe connects the index to r and waits until a probe request's blocks are indexed: a ZMQ
// subscriber misses what was published before its subscription reached the publisher, so the
// probe is repeated (after a cache reset, which stores its blocks again) until one lands.
func subscribe(t *testing.T, ix *fleet.Index, r *replica) {
	t.Helper()
	if err := ix.Subscribe(t.Context(), r.pod, "tcp://"+r.pub.Addr()); err != nil {
		t.Fatal(err)
	}
	probe := seq(1000, 48)
	for range 200 {
		post(t, r.url+"/reset_prefix_cache", map[string]any{})
		r.complete(t, probe, "probe")
		ctx, cancel := context.WithTimeout(t.Context(), 250*time.Millisecond)
		err := ix.WaitHolds(ctx, r.pod, probe, "qwen3", "probe", "")
		cancel()
		if err == nil {
			return
		}
	}
	t.Fatalf("%s: the index never saw the probe's blocks", r.pod)
}

// waitGone polls until pod no longer holds the prompt's first block.
func waitGone(t *testing.T, ix *fleet.Index, pod string, prompt []uint32, salt string) {
	t.Helper()
	for range 2000 {
		s, err := ix.Score(t.Context(), prompt, "qwen3", salt, "", []string{pod})
		if err != nil {
			t.Fatal(err)
		}
		if s[pod] == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond) // polling the index, not synchronizing on a guess
	}
	t.Fatalf("%s still holds the prompt", pod)
}

// TestPoolTracksSimulatedReplicas drives two simulated replicas and checks, through llm-d's own
// ZMQ subscriber, event pool and KV-block index, that the index follows each replica's cache:
// stored prompt and generated blocks, cache_salt separating tenants, eviction, and a reset.
func TestPoolTracksSimulatedReplicas(t *testing.T) {
	ix, err := fleet.NewIndex(t.Context(), fleet.Config{BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close(context.Background()) })
	a, b := startReplica(t, "pod-a", 64), startReplica(t, "pod-b", 4096)
	subscribe(t, ix, a)
	subscribe(t, ix, b)

	prompt := seq(2000, 100) // 6 full blocks
	a.complete(t, prompt, "tenant-1")
	if err := ix.WaitHolds(t.Context(), "pod-a", prompt, "qwen3", "tenant-1", ""); err != nil {
		t.Fatal(err)
	}
	scores, err := ix.Score(t.Context(), prompt, "qwen3", "tenant-1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if scores["pod-a"] != 6 || scores["pod-b"] != 0 {
		t.Errorf("scores %v, want pod-a 6 blocks, pod-b none", scores)
	}
	// Another tenant's salt changes the first block's key, so nothing of tenant-1's matches.
	if other, _ := ix.Score(t.Context(), prompt, "qwen3", "tenant-2", "", nil); other["pod-a"] != 0 {
		t.Errorf("tenant-2 scores %v, want none", other)
	}
	// A longer prompt sharing the first 64 tokens scores 4 blocks on pod-a.
	if s, _ := ix.Score(t.Context(), append(seq(2000, 64), seq(9000, 40)...), "qwen3", "tenant-1", "", nil); s["pod-a"] != 4 {
		t.Errorf("shared-prefix scores %v, want pod-a 4", s)
	}

	b.complete(t, prompt, "tenant-1")
	if err := ix.WaitHolds(t.Context(), "pod-b", prompt, "qwen3", "tenant-1", ""); err != nil {
		t.Fatal(err)
	}

	// pod-a holds 64 blocks: distinct prompts evict the first one's blocks (BlockRemoved).
	for i := range 12 {
		a.complete(t, seq(20000+i*200, 100), "tenant-1")
	}
	waitGone(t, ix, "pod-a", prompt, "tenant-1")
	if s, _ := ix.Score(t.Context(), prompt, "qwen3", "tenant-1", "", nil); s["pod-b"] != 6 {
		t.Errorf("after pod-a's evictions scores %v, want pod-b 6", s)
	}

	// A reset (AllBlocksCleared) empties pod-b.
	post(t, b.url+"/reset_prefix_cache", map[string]any{})
	waitGone(t, ix, "pod-b", prompt, "tenant-1")
}
