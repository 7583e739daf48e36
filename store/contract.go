package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync/atomic"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/internal/jsonlimit"
)

// Checkpoints is the checkpoint contract: the durable response store the
// server writes every finished response to and continues conversations
// from. [Bolt], [RedisCheckpoints], [Memory] and [Fallback] implement it;
// [github.com/stitchllm/stitch/store/storetest.Run] checks an implementation.
//
// The rules every implementation keeps:
//   - Keys are (tenant, id). Another tenant's id, a malformed id, an expired,
//     deleted or corrupt record all read as an error wrapping ErrNotFound
//     (the cases are indistinguishable to a client). ErrDeleted and
//     ErrCorrupt refine it for the caller that wants to know.
//   - Items are immutable per response. An item id already stored with other
//     bytes is not overwritten: the new item is stored under a derived id
//     ("<id>~<16 hex digits of its SHA-256>") and the stored checkpoint lists
//     that id instead, so every checkpoint keeps reading exactly the history
//     it was written with. GetResponse then returns the checkpoint with the
//     derived ids; GetItems returns items under the ids asked for, with their
//     bytes as written (the JSON inside still carries the client's id). A
//     re-put of identical bytes is a no-op refresh.
//   - Deletes are tombstones: after DeleteResponse, GetResponse answers
//     ErrDeleted and PutResponse of that id fails with ErrDeleted, for at
//     least as long as the response would have lived. Items stay: later
//     checkpoints of the conversation may reference them.
//   - Stores copy on write and return fresh values: callers own every slice
//     they pass in or get back.
//   - Errors: ErrUnavailable when the backend cannot answer (retry later,
//     503), ErrInvalidKey for a malformed put, the ctx error when the
//     caller's context ends.
type Checkpoints interface {
	// PutResponse stores cp and items, the items this response introduced
	// (its input and output items), atomically.
	PutResponse(ctx context.Context, cp *Checkpoint, items []Item) error
	// PutResponseHistory is PutResponse given history, the conversation's
	// earlier items (those of cp.ConversationItemIDs before this response) as
	// the caller loaded them. A store that holds the whole conversation
	// already (Bolt, Redis, Memory alone) ignores history; the Fallback
	// copies the items its local store lacks, so the pod's local copy can be
	// continued alone while the shared store is down. Pass nil when the
	// caller did not load them.
	PutResponseHistory(ctx context.Context, cp *Checkpoint, items, history []Item) error
	// GetResponse returns the checkpoint stored for tenant and id.
	GetResponse(ctx context.Context, tenant, id string) (*Checkpoint, error)
	// GetItems returns the items with the given ids in the order of ids
	// (duplicates repeated). A missing or corrupt id fails the whole call
	// with an error wrapping ErrNotFound that names it: an item's bytes are
	// never returned unless they are valid JSON as written.
	GetItems(ctx context.Context, tenant string, ids []string) ([]Item, error)
	// DeleteResponse deletes the checkpoint (a tombstone, see above). An
	// unknown id answers ErrNotFound.
	DeleteResponse(ctx context.Context, tenant, id string) error
}

var (
	_ Checkpoints = (*Bolt)(nil)
	_ Checkpoints = (*RedisCheckpoints)(nil)
	_ Checkpoints = (*Memory)(nil)
	_ Checkpoints = (*Fallback)(nil)
)

// CheckpointStats counts checkpoint-store events for metrics; counters only
// grow, except Queued, a gauge. A store fills the fields it has.
type CheckpointStats struct {
	// Corrupt counts reads that found a corrupt record or item (answered as
	// not found).
	Corrupt uint64
	// Diverted counts items stored under a derived id because their id was
	// already stored with other bytes.
	Diverted uint64
	// Queued is the length of the Fallback's replay queue now.
	Queued uint64
	// Replayed counts queued writes and deletes delivered to the shared
	// store; Dropped those given up (the response was deleted meanwhile, or
	// the shared store refused it for good).
	Replayed, Dropped uint64
	// Republished counts local copies written back to a shared store that had
	// forgotten them (Redis restarted without persistence).
	Republished uint64
	// LocalReads counts reads the Fallback answered from its local copy.
	LocalReads uint64
	// DeletionsFollowed counts deletions announced on the shared store's
	// stream (by any pod, this one included) that the Fallback applied to
	// its local store.
	DeletionsFollowed uint64
	// Unproven counts misses the Fallback answered ErrUnavailable because it
	// could not prove them (see Fallback).
	Unproven uint64
}

// checkpointCounters are the counters behind CheckpointStats.
type checkpointCounters struct {
	corrupt, diverted, replayed, dropped, republished, localReads atomic.Uint64
	deletionsFollowed                                             atomic.Uint64
}

func (c *checkpointCounters) stats() CheckpointStats {
	return CheckpointStats{Corrupt: c.corrupt.Load(), Diverted: c.diverted.Load(), Replayed: c.replayed.Load(),
		Dropped: c.dropped.Load(), Republished: c.republished.Load(), LocalReads: c.localReads.Load(),
		DeletionsFollowed: c.deletionsFollowed.Load()}
}

// divertedID is the id an item is stored under when its own id is taken by
// other bytes: content-addressed, so re-putting the same bytes finds it.
func divertedID(id string, data []byte) string {
	sum := sha256.Sum256(data)
	return id + "~" + hex.EncodeToString(sum[:8])
}

// divert returns copies of cp and items with items[i] renamed to renamed[i]
// for every i in renamed. An item that is one of cp's own (listed in
// InputItemIDs or OutputItemIDs) is renamed there and in the conversation's
// tail (the last len(in)+len(out) entries, when they are in then out, as the
// server builds them), so an earlier entry with the same id keeps the bytes
// it had. Any other item (history passed along) is renamed everywhere in the
// conversation.
func divert(cp *Checkpoint, items []Item, renamed map[int]string) (*Checkpoint, []Item) {
	c := *cp
	c.InputItemIDs = slices.Clone(cp.InputItemIDs)
	c.OutputItemIDs = slices.Clone(cp.OutputItemIDs)
	c.ConversationItemIDs = slices.Clone(cp.ConversationItemIDs)
	out := slices.Clone(items)
	tail := len(c.InputItemIDs) + len(c.OutputItemIDs)
	start := len(c.ConversationItemIDs) - tail
	tailMatches := start >= 0 &&
		slices.Equal(c.ConversationItemIDs[start:start+len(c.InputItemIDs)], c.InputItemIDs) &&
		slices.Equal(c.ConversationItemIDs[start+len(c.InputItemIDs):], c.OutputItemIDs)
	replace := func(ids []string, old, new string) bool {
		found := false
		for i, id := range ids {
			if id == old {
				ids[i], found = new, true
			}
		}
		return found
	}
	for i, newID := range renamed {
		old := out[i].ID
		out[i].ID = newID
		own := replace(c.InputItemIDs, old, newID)
		own = replace(c.OutputItemIDs, old, newID) || own
		if own && tailMatches {
			replace(c.ConversationItemIDs[start:], old, newID)
		} else {
			replace(c.ConversationItemIDs, old, newID)
		}
	}
	return &c, out
}

// validItemData reports whether stored item bytes may be returned: valid
// JSON (validJSON).
func validItemData(b []byte) bool { return len(b) > 0 && validJSON(b) }

// recursiveValidDepth is the nesting up to which validJSON uses gjson's
// recursive validator: a few thousand stack frames at most.
const recursiveValidDepth = 1000

// validJSON reports whether b is valid JSON, as json.Valid does. gjson's
// validator accepts the same inputs about four times faster, every item of a
// turn being checked as it is stored and read; it recurses once per level of
// nesting, so input nested deeper than recursiveValidDepth (which no stitch
// item is, but stored bytes may be anything) goes to encoding/json's, which
// is iterative and cannot exhaust the stack.
func validJSON(b []byte) bool {
	if jsonlimit.CheckDepth(b, recursiveValidDepth) != nil {
		return json.Valid(b)
	}
	return gjson.ValidBytes(b)
}
