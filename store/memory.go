package store

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// Memory is an in-process checkpoint store for tests and for running without
// persistence. It keeps everything until deleted (tombstones forever) and is
// safe for concurrent use. It stores the same encoded records as Bolt, so
// round-trip behaviour (copies, precision) matches the durable stores. The
// zero value is not usable; call NewMemory.
type Memory struct {
	mu         sync.RWMutex
	responses  map[string][]byte
	items      map[string][]byte
	tombstones map[string]bool
	counters   checkpointCounters
}

// NewMemory returns an empty Memory store.
func NewMemory() *Memory {
	return &Memory{responses: make(map[string][]byte), items: make(map[string][]byte), tombstones: make(map[string]bool)}
}

// PutResponse stores items and cp atomically (copies of both), keeping
// items immutable (see Checkpoints).
func (m *Memory) PutResponse(ctx context.Context, cp *Checkpoint, items []Item) error {
	if err := checkPut(cp, items); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put response %q: %w", cp.ID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tombstones[localKey(cp.Tenant, cp.ID)] {
		return fmt.Errorf("put response %q: %w", cp.ID, ErrDeleted)
	}
	var renamed map[int]string // made for the first item diverted: most turns have none
	for i, it := range items {
		if cur, ok := m.items[localKey(cp.Tenant, it.ID)]; ok && !bytes.Equal(cur, it.Data) {
			if renamed == nil {
				renamed = map[int]string{}
			}
			renamed[i] = divertedID(it.ID, it.Data)
		}
	}
	if len(renamed) > 0 {
		cp, items = divert(cp, items, renamed)
		m.counters.diverted.Add(uint64(len(renamed)))
	}
	rec, err := encodeCheckpoint(cp)
	if err != nil {
		return err
	}
	for _, it := range items {
		m.items[localKey(cp.Tenant, it.ID)] = append([]byte(nil), it.Data...)
	}
	m.responses[localKey(cp.Tenant, cp.ID)] = rec
	return nil
}

// PutResponseHistory is PutResponse: the store already holds the history.
func (m *Memory) PutResponseHistory(ctx context.Context, cp *Checkpoint, items, _ []Item) error {
	return m.PutResponse(ctx, cp, items)
}

// GetResponse returns a fresh copy of the checkpoint, or ErrNotFound
// (ErrDeleted after a delete).
func (m *Memory) GetResponse(ctx context.Context, tenant, id string) (*Checkpoint, error) {
	op := func() string { return fmt.Sprintf("get response %q", truncate(id)) } // for errors only
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", op(), err)
	}
	k := localKey(tenant, id)
	m.mu.RLock()
	rec, ok := m.responses[k]
	deleted := m.tombstones[k]
	m.mu.RUnlock()
	switch {
	case checkKey(tenant, id) != nil:
		return nil, fmt.Errorf("%s: %w", op(), ErrNotFound)
	case deleted:
		return nil, fmt.Errorf("%s: %w", op(), ErrDeleted)
	case !ok:
		return nil, fmt.Errorf("%s: %w", op(), ErrNotFound)
	}
	cp, err := decodeCheckpoint(rec)
	if err != nil {
		m.counters.corrupt.Add(1)
		return nil, corrupt(op(), err)
	}
	return cp, nil
}

// GetItems returns copies of the items in the order of ids; a missing id
// fails the call with ErrNotFound.
func (m *Memory) GetItems(ctx context.Context, tenant string, ids []string) ([]Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get items: %w", err)
	}
	items := make([]Item, len(ids))
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i, id := range ids {
		v, ok := m.items[localKey(tenant, id)]
		if !ok || !validTenant(tenant) || !validStoredID(id) {
			return nil, fmt.Errorf("get item %q: %w", truncate(id), ErrNotFound)
		}
		items[i] = Item{ID: id, Data: append([]byte(nil), v...)}
	}
	return items, nil
}

// DeleteResponse replaces the checkpoint record with a tombstone (items
// stay).
func (m *Memory) DeleteResponse(ctx context.Context, tenant, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete response %q: %w", truncate(id), err)
	}
	k := localKey(tenant, id)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.responses[k]; !ok || checkKey(tenant, id) != nil {
		return fmt.Errorf("delete response %q: %w", truncate(id), ErrNotFound)
	}
	delete(m.responses, k)
	m.tombstones[k] = true
	return nil
}

// CheckpointStats returns the store's counters (Diverted; Corrupt stays 0).
func (m *Memory) CheckpointStats() CheckpointStats { return m.counters.stats() }
