package prepare_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/store"
)

// countingReader counts the checkpoints an engine reads.
type countingReader struct {
	inner prepare.CheckpointReader
	n     atomic.Int64
}

func (c *countingReader) GetResponse(ctx context.Context, tenant, id string) (*store.Checkpoint, error) {
	c.n.Add(1)
	return c.inner.GetResponse(ctx, tenant, id)
}

// TestExactUsesCallersCheckpoint: given the previous response's checkpoint (Input.Previous, which
// the server loaded to resolve previous_response_id), exact mode reads no checkpoint, and prepares
// the ids it prepares when it reads the checkpoint itself.
func TestExactUsesCallersCheckpoint(t *testing.T) {
	counter := &countingReader{}
	for _, hot := range []bool{false, true} {
		t.Run(fmt.Sprintf("hot=%v", hot), func(t *testing.T) {
			env := newArtEnv(t, envOptions{mode: store.ModeExact, hot: hot, checkpoints: counter})
			counter.inner = env.cps
			ctx := t.Context()
			base := startConversation(t, env, sessionParams{tenant: "t1"})
			convIDs := make([]string, len(base.items))
			for i := range convIDs {
				convIDs[i] = fmt.Sprintf("item_%d", i)
			}
			env.persist(ctx, base.in, base.p, base.resp, convIDs)
			cp, err := env.cps.GetResponse(ctx, "t1", base.id)
			if err != nil {
				t.Fatal(err)
			}

			counter.n.Store(0)
			in := continuation(base, "")
			in.Previous = cp
			given, err := env.prep.Prepare(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if n := counter.n.Load(); n != 0 {
				t.Errorf("with Input.Previous the engine read %d checkpoints, want 0", n)
			}
			read, err := env.prep.Prepare(ctx, continuation(base, ""))
			if err != nil {
				t.Fatal(err)
			}
			if counter.n.Load() == 0 {
				t.Error("without Input.Previous the engine read no checkpoint: the test no longer covers the split")
			}
			if !slices.Equal(given.IDs, read.IDs) || given.Reused == 0 {
				t.Errorf("ids differ with the caller's checkpoint (reused %d, %d ids vs %d)", given.Reused, len(given.IDs), len(read.IDs))
			}
		})
	}
}
