package store

import (
	"context"
	"fmt"
	"sync"
)

// Memory is an in-process checkpoint store for tests and for running without
// persistence. It keeps everything until deleted and is safe for concurrent
// use. It stores the same encoded records as Bolt, so round-trip behaviour
// (copies, precision) matches the durable stores. The zero value is not
// usable; call NewMemory.
type Memory struct {
	mu        sync.RWMutex
	responses map[string][]byte
	items     map[string][]byte
}

// NewMemory returns an empty Memory store.
func NewMemory() *Memory {
	return &Memory{responses: make(map[string][]byte), items: make(map[string][]byte)}
}

// PutResponse stores items and cp atomically (copies of both).
func (m *Memory) PutResponse(ctx context.Context, cp *Checkpoint, items []Item) error {
	if err := checkPut(cp, items); err != nil {
		return err
	}
	rec, err := encodeCheckpoint(cp)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put response %q: %w", cp.ID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, it := range items {
		m.items[localKey(cp.Tenant, it.ID)] = append([]byte(nil), it.Data...)
	}
	m.responses[localKey(cp.Tenant, cp.ID)] = rec
	return nil
}

// GetResponse returns a fresh copy of the checkpoint, or ErrNotFound.
func (m *Memory) GetResponse(ctx context.Context, tenant, id string) (*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get response %q: %w", truncate(id), err)
	}
	m.mu.RLock()
	rec, ok := m.responses[localKey(tenant, id)]
	m.mu.RUnlock()
	if !ok || checkKey(tenant, id) != nil {
		return nil, fmt.Errorf("get response %q: %w", truncate(id), ErrNotFound)
	}
	return decodeCheckpoint(rec)
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
		if !ok || checkKey(tenant, id) != nil {
			return nil, fmt.Errorf("get item %q: %w", truncate(id), ErrNotFound)
		}
		items[i] = Item{ID: id, Data: append([]byte(nil), v...)}
	}
	return items, nil
}

// DeleteResponse removes the checkpoint record (not its items).
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
	return nil
}
