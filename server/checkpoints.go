package server

import (
	"context"

	"github.com/stitchllm/stitch/store"
)

// historyPutter is the history write of store.Checkpoints (the fallback copies the earlier items
// its local store lacks). Every store implements it; it stays optional here until Checkpoints is
// store.Checkpoints.
type historyPutter interface {
	PutResponseHistory(ctx context.Context, cp *store.Checkpoint, items, history []store.Item) error
}
