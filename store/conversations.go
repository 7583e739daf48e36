package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrDuplicateItem reports an item whose id the conversation holds already.
var ErrDuplicateItem = errors.New("store: item id already in the conversation")

// ErrTooManyItems reports items that would take a conversation past its MaxItems.
var ErrTooManyItems = errors.New("store: too many items in the conversation")

// Conversation is a Conversations API conversation: its metadata and its items in order.
type Conversation struct {
	ID        string          `json:"id"`
	Tenant    string          `json:"tenant"`
	CreatedAt time.Time       `json:"created_at"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	// ItemIDs are the conversation's items, oldest first.
	ItemIDs []string `json:"items"`
	// Version counts the changes of ItemIDs.
	Version int64 `json:"version"`
	// LastResponseID is the response whose conversation (its checkpoint's
	// ConversationItemIDs) is exactly ItemIDs: the last turn appended it and nothing changed
	// the items since. Empty otherwise.
	LastResponseID string `json:"last_response,omitempty"`
	// ItemsTouched is when every item's ttl was last refreshed (Unix ms; 0: never, a record
	// written before items outlived their record). See Conversations.
	ItemsTouched int64 `json:"items_touched,omitempty"`
}

// ConversationsOptions configures Conversations. The zero value is ready to use.
type ConversationsOptions struct {
	// TTL is how long a conversation and its items are kept after their last change. Zero
	// means 30 days.
	TTL time.Duration
	// MaxItems bounds the items of one conversation (0: unbounded). Create and AddItems refuse
	// items past it with ErrTooManyItems; Append does not: a turn is admitted against the bound
	// before it generates (the caller checks), and a response the client saw must reach its
	// conversation, so a conversation may exceed MaxItems by one turn's output.
	MaxItems int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Conversations stores conversations (one record each) and their items (one record per item,
// keyed by conversation and item id) in a RecordBackend. Safe for concurrent use.
//
// A change costs O(new items), not O(items): items are written to live itemSlack longer than
// their record, and only a change itemSlack after the last refresh of every item's ttl
// (ItemsTouched) refreshes them all again. The record's expiry (its last change + TTL) thus
// never passes an item's (its last refresh + TTL + itemSlack), and a conversation of n items
// pays the O(n) refresh at most once per itemSlack. Items of an expired conversation linger at
// most itemSlack; Delete removes them at once.
type Conversations struct {
	b        RecordBackend
	ttl      time.Duration
	maxItems int
	now      func() time.Time
}

// NewConversations returns Conversations over b.
func NewConversations(b RecordBackend, opts ConversationsOptions) *Conversations {
	if opts.TTL <= 0 {
		opts.TTL = 30 * 24 * time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Conversations{b: b, ttl: opts.TTL, maxItems: opts.MaxItems, now: opts.Now}
}

// itemSlack is how much longer than their record items live (see Conversations).
func (s *Conversations) itemSlack() time.Duration { return s.ttl / 8 }

// MaxItems is the bound on one conversation's items (0: unbounded).
func (s *Conversations) MaxItems() int { return s.maxItems }

func (s *Conversations) recKey(tenant, id string) string { return s.b.key(tenant, "conv", id) }

func (s *Conversations) itemKey(tenant, conv, item string) string {
	return s.b.key(tenant, "citem", conv+"\x00"+item)
}

func decodeConversation(b []byte, tenant, id string) (*Conversation, error) {
	var c Conversation
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, corrupt("decode conversation", err)
	}
	if c.Tenant != tenant || c.ID != id {
		return nil, corrupt("decode conversation", fmt.Errorf("record of %q names another conversation", truncate(id)))
	}
	return &c, nil
}

func checkItems(items []Item, have []string) error {
	seen := make(map[string]bool, len(have)+len(items))
	for _, id := range have {
		seen[id] = true
	}
	for _, it := range items {
		if !keyPart(it.ID) || !validItemData(it.Data) {
			return fmt.Errorf("conversation item %q: %w", truncate(it.ID), ErrInvalidKey)
		}
		if seen[it.ID] {
			return fmt.Errorf("conversation item %q: %w", truncate(it.ID), ErrDuplicateItem)
		}
		seen[it.ID] = true
	}
	return nil
}

// checkCount refuses adding n items to a conversation of have.
func (s *Conversations) checkCount(id string, have, n int) error {
	if s.maxItems > 0 && have+n > s.maxItems {
		return fmt.Errorf("conversation %q holds %d items, %d more exceed %d: %w", truncate(id), have, n, s.maxItems, ErrTooManyItems)
	}
	return nil
}

// change applies fn to the stored conversation and writes the result, with puts and dels of
// item records, refreshing every item's TTL.
func (s *Conversations) change(ctx context.Context, tenant, id string, fn func(c *Conversation) (puts []recordPut, dels []string, err error)) (*Conversation, error) {
	if !validTenant(tenant) || !keyPart(id) {
		return nil, fmt.Errorf("conversation %q: %w", truncate(id), ErrNotFound)
	}
	rk := s.recKey(tenant, id)
	var out *Conversation
	err := s.b.update(ctx, rk, func(cur []byte) (*recordWrites, error) {
		if cur == nil {
			return nil, fmt.Errorf("conversation %q: %w", truncate(id), ErrNotFound)
		}
		c, err := decodeConversation(cur, tenant, id)
		if err != nil {
			return nil, err
		}
		puts, dels, err := fn(c)
		if err != nil {
			return nil, err
		}
		w := &recordWrites{ttl: s.ttl, touchPuts: puts, dels: dels, touchTTL: s.ttl + s.itemSlack()}
		if now := s.now(); now.Sub(time.UnixMilli(c.ItemsTouched)) >= s.itemSlack() {
			// Every item's expiry is near its record's: refresh them all (the new ones are put).
			put := make(map[string]bool, len(puts))
			for _, p := range puts {
				put[p.key] = true
			}
			w.touch = make([]string, 0, len(c.ItemIDs))
			for _, it := range c.ItemIDs {
				if k := s.itemKey(tenant, id, it); !put[k] {
					w.touch = append(w.touch, k)
				}
			}
			c.ItemsTouched = now.UnixMilli()
		}
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		w.puts = []recordPut{{rk, b}}
		out = c
		return w, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Create stores a new conversation with its first items (ids unique). An id that exists
// already fails with ErrInvalidKey.
func (s *Conversations) Create(ctx context.Context, c *Conversation, items []Item) error {
	if !validTenant(c.Tenant) || !keyPart(c.ID) {
		return fmt.Errorf("create conversation %q: %w", truncate(c.ID), ErrInvalidKey)
	}
	if err := s.checkCount(c.ID, 0, len(items)); err != nil {
		return err
	}
	if err := checkItems(items, nil); err != nil {
		return err
	}
	rk := s.recKey(c.Tenant, c.ID)
	return s.b.update(ctx, rk, func(cur []byte) (*recordWrites, error) {
		if cur != nil {
			return nil, fmt.Errorf("create conversation %q: exists: %w", truncate(c.ID), ErrInvalidKey)
		}
		rec := *c
		rec.ItemIDs = make([]string, 0, len(items))
		rec.ItemsTouched = s.now().UnixMilli()
		w := &recordWrites{ttl: s.ttl, touchTTL: s.ttl + s.itemSlack()}
		for _, it := range items {
			rec.ItemIDs = append(rec.ItemIDs, it.ID)
			w.touchPuts = append(w.touchPuts, recordPut{s.itemKey(c.Tenant, c.ID, it.ID), it.Data})
		}
		b, err := json.Marshal(&rec)
		if err != nil {
			return nil, err
		}
		w.puts = append(w.puts, recordPut{rk, b})
		return w, nil
	})
}

// Get returns the conversation (ErrNotFound for an unknown, deleted, expired or another
// tenant's id).
func (s *Conversations) Get(ctx context.Context, tenant, id string) (*Conversation, error) {
	if !validTenant(tenant) || !keyPart(id) {
		return nil, fmt.Errorf("get conversation %q: %w", truncate(id), ErrNotFound)
	}
	b, err := s.b.get(ctx, s.recKey(tenant, id))
	if err != nil {
		return nil, fmt.Errorf("get conversation %q: %w", truncate(id), err)
	}
	return decodeConversation(b, tenant, id)
}

// SetMetadata replaces the conversation's metadata.
func (s *Conversations) SetMetadata(ctx context.Context, tenant, id string, metadata json.RawMessage) (*Conversation, error) {
	return s.change(ctx, tenant, id, func(c *Conversation) ([]recordPut, []string, error) {
		c.Metadata = metadata
		return nil, nil, nil
	})
}

// Delete removes the conversation and its items.
func (s *Conversations) Delete(ctx context.Context, tenant, id string) error {
	if !validTenant(tenant) || !keyPart(id) {
		return fmt.Errorf("delete conversation %q: %w", truncate(id), ErrNotFound)
	}
	rk := s.recKey(tenant, id)
	return s.b.update(ctx, rk, func(cur []byte) (*recordWrites, error) {
		if cur == nil {
			return nil, fmt.Errorf("delete conversation %q: %w", truncate(id), ErrNotFound)
		}
		c, err := decodeConversation(cur, tenant, id)
		if err != nil {
			return nil, err
		}
		dels := []string{rk}
		for _, it := range c.ItemIDs {
			dels = append(dels, s.itemKey(tenant, id, it))
		}
		return &recordWrites{ttl: s.ttl, dels: dels}, nil
	})
}

// Append adds a turn's items at the end (never refused for MaxItems). responseID names the
// response whose turn these items are (its input then its output) and version the
// conversation's Version its turn was prepared from: when nothing changed the conversation
// since, the response becomes LastResponseID; otherwise (or with responseID empty)
// LastResponseID is cleared.
func (s *Conversations) Append(ctx context.Context, tenant, id string, items []Item, responseID string, version int64) (*Conversation, error) {
	return s.appendItems(ctx, tenant, id, items, responseID, version, false)
}

// AddItems adds a client's items at the end (POST /v1/conversations/{id}/items): items past
// MaxItems fail with ErrTooManyItems and nothing is added.
func (s *Conversations) AddItems(ctx context.Context, tenant, id string, items []Item) (*Conversation, error) {
	return s.appendItems(ctx, tenant, id, items, "", 0, true)
}

func (s *Conversations) appendItems(ctx context.Context, tenant, id string, items []Item, responseID string, version int64, bounded bool) (*Conversation, error) {
	return s.change(ctx, tenant, id, func(c *Conversation) ([]recordPut, []string, error) {
		if bounded {
			if err := s.checkCount(id, len(c.ItemIDs), len(items)); err != nil {
				return nil, nil, err
			}
		}
		if err := checkItems(items, c.ItemIDs); err != nil {
			return nil, nil, err
		}
		puts := make([]recordPut, 0, len(items))
		for _, it := range items {
			c.ItemIDs = append(c.ItemIDs, it.ID)
			puts = append(puts, recordPut{s.itemKey(tenant, id, it.ID), it.Data})
		}
		if responseID != "" && c.Version == version {
			c.LastResponseID = responseID
		} else {
			c.LastResponseID = ""
		}
		c.Version++
		return puts, nil, nil
	})
}

// DeleteItem removes one item (ErrNotFound when the conversation does not hold it).
func (s *Conversations) DeleteItem(ctx context.Context, tenant, id, itemID string) (*Conversation, error) {
	return s.change(ctx, tenant, id, func(c *Conversation) ([]recordPut, []string, error) {
		i := slices.Index(c.ItemIDs, itemID)
		if i < 0 {
			return nil, nil, fmt.Errorf("conversation item %q: %w", truncate(itemID), ErrNotFound)
		}
		c.ItemIDs = slices.Delete(c.ItemIDs, i, i+1)
		c.LastResponseID = ""
		c.Version++
		return nil, []string{s.itemKey(tenant, id, itemID)}, nil
	})
}

// Items returns the conversation's items with the given ids, in order. A missing one fails
// the call with ErrNotFound naming it.
func (s *Conversations) Items(ctx context.Context, tenant, id string, ids []string) ([]Item, error) {
	if !validTenant(tenant) || !keyPart(id) {
		return nil, fmt.Errorf("conversation items %q: %w", truncate(id), ErrNotFound)
	}
	keys := make([]string, len(ids))
	for i, it := range ids {
		keys[i] = s.itemKey(tenant, id, it)
	}
	vals, err := s.b.mget(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("conversation items %q: %w", truncate(id), err)
	}
	out := make([]Item, len(ids))
	for i, v := range vals {
		if v == nil || !validItemData(v) {
			return nil, fmt.Errorf("conversation item %q: %w", truncate(ids[i]), ErrNotFound)
		}
		out[i] = Item{ID: ids[i], Data: v}
	}
	return out, nil
}
