package prepare

import "encoding/json"

// History is a response's whole conversation as the turn that produced it held it in memory: the
// items its checkpoint's ConversationItemIDs name, in order, with the bytes it stored under those
// ids. Kept with the response's hot entry (Prompt.KeepHistory), it spares the next turn reading
// every earlier item back from the checkpoint store and checking it again: at 100k tokens that is
// ~400 KB copied out of the store and scanned per turn, for items that cannot have changed (the
// store keeps an item's bytes under its id, other bytes get a derived id, store.Checkpoints). The
// caller uses it only when IDs equal the checkpoint it read (so the store holds these very items),
// and must not modify it: turns that continue the same response share it.
type History struct {
	IDs   []string
	Items []json.RawMessage
	// Derived is what the caller computed from Items and keeps with them (the server: the
	// conversation's function calls, for the tool-call pairing check); prepare never reads it.
	Derived any
	// DerivedBytes estimates the memory Derived holds, for the hot cache's bound.
	DerivedBytes int
}

// bytes estimates the memory h holds: the items' bytes, their slice headers and ids.
func (h *History) bytes() int64 {
	n := int64(64 + h.DerivedBytes)
	for i, it := range h.Items {
		n += int64(len(it)) + 24
		if i < len(h.IDs) {
			n += int64(len(h.IDs[i])) + 16
		}
	}
	return n
}

// HistoryKeeper is an Engine that keeps a committed response's History with its hot entry (the
// artifact engines with a hot cache).
type HistoryKeeper interface {
	// History returns what Prompt.KeepHistory kept for a tenant's response, nil when the hot cache
	// holds none (never prepared here, evicted, retired, or no hot cache).
	History(tenant, responseID string) *History
}

var (
	_ HistoryKeeper = (*ArtifactEngine)(nil)
	_ HistoryKeeper = (*HarmonyArtifacts)(nil)
)

// KeepHistory gives Commit the conversation the response ends, to keep with its hot entry for
// the next turn (HistoryKeeper). Call it before Commit; engines without a hot cache ignore it.
func (p *Prompt) KeepHistory(h *History) {
	if p.pending != nil {
		p.pending.history = h
	}
}

// History implements HistoryKeeper.
func (a *ArtifactEngine) History(tenant, responseID string) *History {
	if a.opts.Hot == nil || responseID == "" {
		return nil
	}
	return a.opts.Hot.history(tenant, responseID)
}

// History implements HistoryKeeper.
func (e *HarmonyArtifacts) History(tenant, responseID string) *History {
	return e.a.History(tenant, responseID)
}
