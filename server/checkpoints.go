package server

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/stitchllm/stitch/store"
)

// FallbackCheckpoints writes every checkpoint to the shared store (Redis) and to the pod's local
// store, and reads the shared one first. While the shared store is unavailable:
//   - reads fall back to the local copy, so a pod keeps continuing the conversations it served; a
//     checkpoint it never saw is unavailable (503 with Retry-After), never a wrong answer;
//   - writes land locally and are queued; the queue is replayed to the shared store with the next
//     write that reaches it, so the responses made meanwhile become visible to every pod.
//
// Checkpoints are immutable, so a local copy can only be stale by a deletion, which is why the
// shared store is asked first whenever it answers. The zero value is not usable; set Primary,
// Local and Logger. It is safe for concurrent use.
type FallbackCheckpoints struct {
	Primary Checkpoints // shared: the source of truth across pods
	Local   Checkpoints // this pod's copy
	Logger  *slog.Logger

	mu      sync.Mutex
	pending []pendingWrite // written locally while the shared store was unavailable, oldest first
}

// pendingWrite names a checkpoint to replay to the shared store.
type pendingWrite struct{ tenant, id string }

// maxPending bounds the replay queue; beyond it the oldest entries stay local-only (their pod still
// serves them; other pods answer not found until they expire).
const maxPending = 10000

var _ Checkpoints = (*FallbackCheckpoints)(nil)

// PutResponse writes locally, then to the shared store. When the shared store is unavailable the
// write still succeeds (the response is durable on this pod) and is queued for replay.
func (f *FallbackCheckpoints) PutResponse(ctx context.Context, cp *store.Checkpoint, items []store.Item) error {
	return f.PutResponseHistory(ctx, cp, items, nil)
}

// historyPutter is the optional capability of a Checkpoints that wants the conversation's earlier
// items (as the turn loaded them) along with a write.
type historyPutter interface {
	PutResponseHistory(ctx context.Context, cp *store.Checkpoint, items, history []store.Item) error
}

var _ historyPutter = (*FallbackCheckpoints)(nil)

// PutResponseHistory is PutResponse given history, the conversation's items before this
// response. When the local store lacks some of them (earlier turns were served by other pods),
// history is written locally too: otherwise the local copy of cp could not be continued alone
// while the shared store is down. Without history they are fetched from the shared store (best
// effort).
func (f *FallbackCheckpoints) PutResponseHistory(ctx context.Context, cp *store.Checkpoint, items, history []store.Item) error {
	local := items
	if missing := f.missingLocally(ctx, cp, items); len(missing) > 0 {
		if len(history) == 0 {
			var err error
			if history, err = f.Primary.GetItems(ctx, cp.Tenant, missing); err != nil {
				f.Logger.Warn("earlier items not copied to the local store", "response_id", cp.ID, "err", err)
				history = nil
			}
		}
		local = append(slices.Clip(items), history...)
	}
	if err := f.Local.PutResponse(ctx, cp, local); err != nil {
		return err
	}
	err := f.Primary.PutResponse(ctx, cp, items)
	if errors.Is(err, store.ErrUnavailable) {
		f.mu.Lock()
		if len(f.pending) < maxPending {
			f.pending = append(f.pending, pendingWrite{cp.Tenant, cp.ID})
		}
		n := len(f.pending)
		f.mu.Unlock()
		f.Logger.Warn("shared store unavailable: response kept on this pod and queued", "response_id", cp.ID, "queued", n)
		return nil
	}
	if err == nil {
		f.replay(ctx)
	}
	return err
}

// missingLocally returns the ids of cp's conversation that are not among items, when the local
// store lacks any of them (nil when it has them all).
func (f *FallbackCheckpoints) missingLocally(ctx context.Context, cp *store.Checkpoint, items []store.Item) []string {
	written := make(map[string]bool, len(items))
	for _, it := range items {
		written[it.ID] = true
	}
	var earlier []string
	for _, id := range cp.ConversationItemIDs {
		if !written[id] {
			earlier = append(earlier, id)
		}
	}
	if len(earlier) == 0 {
		return nil
	}
	if _, err := f.Local.GetItems(ctx, cp.Tenant, earlier); err == nil {
		return nil
	}
	return earlier
}

// replay writes the queued checkpoints to the shared store, stopping at the first failure.
func (f *FallbackCheckpoints) replay(ctx context.Context) {
	f.mu.Lock()
	queue := f.pending
	f.pending = nil
	f.mu.Unlock()
	for i, w := range queue {
		err := f.copyToPrimary(ctx, w)
		if errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
			f.mu.Lock()
			f.pending = append(queue[i:], f.pending...)
			f.mu.Unlock()
			return
		}
		if err != nil {
			f.Logger.Error("replay queued response to the shared store", "response_id", w.id, "err", err)
		}
	}
	if len(queue) > 0 {
		f.Logger.Info("shared store back: queued responses replayed", "count", len(queue))
	}
}

func (f *FallbackCheckpoints) copyToPrimary(ctx context.Context, w pendingWrite) error {
	cp, err := f.Local.GetResponse(ctx, w.tenant, w.id)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	ids := cp.InputItemIDs
	ids = append(ids[:len(ids):len(ids)], cp.OutputItemIDs...)
	items, err := f.Local.GetItems(ctx, w.tenant, ids)
	if err != nil {
		return err
	}
	return f.Primary.PutResponse(ctx, cp, items)
}

// GetResponse reads the shared store, or the local copy when the shared store is unavailable.
func (f *FallbackCheckpoints) GetResponse(ctx context.Context, tenant, id string) (*store.Checkpoint, error) {
	cp, err := f.Primary.GetResponse(ctx, tenant, id)
	if err == nil || !errors.Is(err, store.ErrUnavailable) {
		if f.hasPending() {
			f.replay(ctx) // the shared store answers again
			if errors.Is(err, store.ErrNotFound) {
				cp, err = f.Primary.GetResponse(ctx, tenant, id)
			}
		}
		if errors.Is(err, store.ErrNotFound) && f.isPending(tenant, id) {
			return f.Local.GetResponse(ctx, tenant, id) // written here, not replayed yet
		}
		return cp, err
	}
	local, lerr := f.Local.GetResponse(ctx, tenant, id)
	if lerr != nil {
		return nil, err // the shared store's unavailability is the answer that matters
	}
	f.Logger.Warn("shared store unavailable: continuing from the local checkpoint", "response_id", id)
	return local, nil
}

func (f *FallbackCheckpoints) hasPending() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending) > 0
}

func (f *FallbackCheckpoints) isPending(tenant, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.pending {
		if w.tenant == tenant && w.id == id {
			return true
		}
	}
	return false
}

// GetItems reads the shared store, or the local copy when the shared store is unavailable or lacks
// items this pod wrote while it was down.
func (f *FallbackCheckpoints) GetItems(ctx context.Context, tenant string, ids []string) ([]store.Item, error) {
	items, err := f.Primary.GetItems(ctx, tenant, ids)
	if err == nil {
		return items, nil
	}
	if !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	local, lerr := f.Local.GetItems(ctx, tenant, ids)
	if lerr != nil {
		return nil, err
	}
	return local, nil
}

// DeleteResponse deletes from both; the shared store decides the answer.
func (f *FallbackCheckpoints) DeleteResponse(ctx context.Context, tenant, id string) error {
	lerr := f.Local.DeleteResponse(ctx, tenant, id)
	err := f.Primary.DeleteResponse(ctx, tenant, id)
	if errors.Is(err, store.ErrNotFound) && lerr == nil {
		return nil
	}
	return err
}
