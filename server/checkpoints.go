package server

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/stitchllm/stitch/store"
)

// FallbackCheckpoints writes every checkpoint to the shared store (Redis) and to the pod's local
// store, and reads the shared one first. When the shared store is unavailable, reads fall back to
// the local copy, so a pod keeps continuing the conversations it served while Redis is down; a
// checkpoint it never saw is then unavailable (503 with Retry-After), never a wrong answer.
// Checkpoints are immutable, so a local copy can only be stale by a deletion, which is why the
// shared store is asked first whenever it answers.
type FallbackCheckpoints struct {
	Primary Checkpoints // shared: the source of truth across pods
	Local   Checkpoints // this pod's copy
	Logger  *slog.Logger
}

var _ Checkpoints = (*FallbackCheckpoints)(nil)

// PutResponse writes locally, then to the shared store; a shared-store failure fails the write
// (the response must be continuable on every pod or reported as not stored).
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
	return f.Primary.PutResponse(ctx, cp, items)
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

// GetResponse reads the shared store, or the local copy when the shared store is unavailable.
func (f *FallbackCheckpoints) GetResponse(ctx context.Context, tenant, id string) (*store.Checkpoint, error) {
	cp, err := f.Primary.GetResponse(ctx, tenant, id)
	if err == nil || !errors.Is(err, store.ErrUnavailable) {
		return cp, err
	}
	local, lerr := f.Local.GetResponse(ctx, tenant, id)
	if lerr != nil {
		return nil, err // the shared store's unavailability is the answer that matters
	}
	f.Logger.Warn("shared store unavailable: continuing from the local checkpoint", "response_id", id)
	return local, nil
}

// GetItems reads the shared store, or the local copy when the shared store is unavailable.
func (f *FallbackCheckpoints) GetItems(ctx context.Context, tenant string, ids []string) ([]store.Item, error) {
	items, err := f.Primary.GetItems(ctx, tenant, ids)
	if err == nil || !errors.Is(err, store.ErrUnavailable) {
		return items, err
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
