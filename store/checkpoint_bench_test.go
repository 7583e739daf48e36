package store_test

import (
	"fmt"
	"testing"

	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
	"github.com/stitchllm/stitch/store/storetest"
)

// BenchmarkCheckpointPut measures one persisted turn (3 items, a
// 3-item history) per store: Redis plain and sealed (one Lua script each),
// and the Fallback (Redis sealed, then the fsync'd Bolt copy).
func BenchmarkCheckpointPut(b *testing.B) {
	addr := redistest.Start(b)
	c := store.NewRedisClient(store.RedisOptions{Addrs: []string{addr}})
	b.Cleanup(func() { c.Close() })
	sealer, err := store.NewSealer([]store.SealKey{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, store.SealerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	local, err := store.OpenBolt(b.TempDir(), store.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { local.Close() })
	stores := []struct {
		name string
		s    store.Checkpoints
	}{
		{"redis", store.NewRedisCheckpoints(c, store.RedisCheckpointsOptions{Prefix: "plain"})},
		{"redis_sealed", store.NewRedisCheckpoints(c, store.RedisCheckpointsOptions{Prefix: "sealed", Sealer: sealer})},
		{"fallback", store.NewFallback(store.NewRedisCheckpoints(c, store.RedisCheckpointsOptions{Prefix: "fb", Sealer: sealer}),
			local, store.FallbackOptions{SyncInterval: -1})},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			prev, prevItems := storetest.Sample("acme", "resp_prev")
			if err := st.s.PutResponse(b.Context(), prev, prevItems); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				id := fmt.Sprintf("resp_%d", i)
				i++
				cp, items := storetest.Sample("acme", id)
				cp.ConversationItemIDs = append(append([]string{}, prev.ConversationItemIDs...), cp.ConversationItemIDs...)
				if err := st.s.PutResponseHistory(b.Context(), cp, items, prevItems); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
