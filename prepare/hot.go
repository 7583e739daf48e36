package prepare

import (
	"container/list"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stitchllm/stitch/internal/arena"
	"github.com/stitchllm/stitch/internal/jsonappend"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/render/harmony"
	"github.com/stitchllm/stitch/store"
)

// HotArtifacts keeps, in process memory, what the last turn of each recent conversation left for
// the next one beyond its token artifact: the prompt text, the template's render memo, the
// decoded artifact and the prompt's JSON encoding. A continuation found here compares texts
// instead of digests, replays the template for unchanged messages, and copies the JSON of the
// reused ids, so its preparation costs the new turn only. The sealed artifact in store.Tiered
// stays the durable, portable copy: a continuation not found here (another pod, eviction, restart)
// takes the digest path with the same ids. It keeps one entry per live conversation head: a turn's
// commit retires the entry it continued unless another turn that continued it is still to commit
// (a branch in flight, or one that failed). Entries are immutable (but for that count); the cache
// is bounded by bytes (least recently used evicted first) and safe for concurrent use.
type HotArtifacts struct {
	maxBytes int64

	hits, misses atomic.Uint64

	mu    sync.Mutex
	bytes int64
	lru   *list.List // of *hotEntry, most recent first
	byKey map[hotKey]*list.Element
}

type hotKey struct{ tenant, responseID string }

// hotEntry is one response's prompt state. jsonAt[i] is the offset in promptJSON of the id at
// enc.Boundaries[i].Index.
type hotEntry struct {
	key        hotKey
	art        *store.Artifact
	text       string
	enc        render.Encoding
	memo       *render.RenderMemo
	promptJSON []byte
	jsonAt     []int
	jsonArena  *arena.Arena[byte] // where promptJSON lives, shared with the turns before and after
	messages   int                // rendered messages, for the memo's share of size
	// items is the conversation's state after the turn's stored items, which the next turn
	// resumes its own from (render.ResponsesInput.Resume); nil: none.
	items *render.ItemsPrefix
	// msgDigests are the digests of the prompt's messages on their own, one per boundary of art
	// (Harmony canonical: prevMessages); nil otherwise. harmonyDigests is the plan's digest
	// state they come from, which the next turn resumes hashing from.
	msgDigests     [][render.DigestSize]byte
	harmonyDigests *harmony.DigestState
	// history is the response's conversation as its turn held it (Prompt.KeepHistory); nil: none.
	history *History
	// fingerprint is the turn's fingerprint with what it was computed from, for the next turn's.
	fingerprint *fingerprintMemo
	size        int64
	// uses counts the turns prepared from the entry, children those of them committed (both
	// guarded by HotArtifacts.mu): it is retired once every use committed.
	uses, children int
}

// NewHotCaches splits an --artifact-hot-mb budget of bytes: three quarters for the hot artifacts,
// one quarter for the parsed conversation items (render.ItemCache), which hold the strings the
// hot entries' render memos share.
func NewHotCaches(bytes int64, reg prometheus.Registerer) (*HotArtifacts, *render.ItemCache) {
	return NewHotArtifacts(bytes*3/4, reg), render.NewItemCache(int(bytes / 4))
}

// NewHotArtifacts returns an empty cache of at most maxBytes, with its gauges on reg (nil: none).
func NewHotArtifacts(maxBytes int64, reg prometheus.Registerer) *HotArtifacts {
	h := &HotArtifacts{maxBytes: maxBytes, lru: list.New(), byKey: map[hotKey]*list.Element{}}
	if reg != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "stitch_artifact_hot_bytes", Help: "Estimated bytes held by the in-process hot artifact cache (prompt texts, render memos, decoded ids).",
			}, func() float64 { b, _ := h.usage(); return float64(b) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "stitch_artifact_hot_entries", Help: "Conversations in the in-process hot artifact cache.",
			}, func() float64 { _, n := h.usage(); return float64(n) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "stitch_artifact_hot_hits_total", Help: "Continuations prepared from the in-process hot cache (text compare, template replay).",
			}, func() float64 { return float64(h.hits.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "stitch_artifact_hot_misses_total", Help: "Continuations whose previous response was not in the hot cache (digest path or full render).",
			}, func() float64 { return float64(h.misses.Load()) }),
		)
	}
	return h
}

func (h *HotArtifacts) usage() (int64, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bytes, h.lru.Len()
}

// get returns the entry of a tenant's response unless it is absent or expired.
func (h *HotArtifacts) get(tenant, responseID string, now time.Time) *hotEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.byKey[hotKey{tenant, responseID}]
	if !ok {
		return nil
	}
	e := el.Value.(*hotEntry)
	if !now.Before(e.art.ExpiresAt) {
		h.remove(el)
		return nil
	}
	h.lru.MoveToFront(el)
	e.uses++
	return e
}

// resumeState returns the conversation prefix and the fingerprint memo of a tenant's response
// entry, if any, without counting a use: the turn maps its items and computes its fingerprint
// from them before it knows whether it may use the entry.
func (h *HotArtifacts) resumeState(tenant, responseID string) (*render.ItemsPrefix, *fingerprintMemo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.byKey[hotKey{tenant, responseID}]; ok {
		e := el.Value.(*hotEntry)
		return e.items, e.fingerprint
	}
	return nil, nil
}

// harmonyDigests returns the Harmony digest state of a tenant's response entry, if any, without
// counting a use (as itemsPrefix).
func (h *HotArtifacts) harmonyDigests(tenant, responseID string) *harmony.DigestState {
	if responseID == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.byKey[hotKey{tenant, responseID}]; ok {
		return el.Value.(*hotEntry).harmonyDigests
	}
	return nil
}

// history returns the conversation kept with a tenant's response entry, if any, without counting
// a use (as itemsPrefix): the server reads it before preparing.
func (h *HotArtifacts) history(tenant, responseID string) *History {
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.byKey[hotKey{tenant, responseID}]; ok {
		return el.Value.(*hotEntry).history
	}
	return nil
}

// put adds e, evicting the least recently used entries beyond the bound. An entry larger than
// the whole bound is not kept.
func (h *HotArtifacts) put(e *hotEntry) {
	// The render memo keeps the conversation's messages, whose strings are about as long as the
	// text: count the text twice. The ids and their JSON are counted by the arrays they keep
	// alive (their arenas' room included), not their length: an entry holds those arrays whole
	// (issue 31: arena rooms were most of the real heap of a cache that counted lengths).
	jsonHeld := int64(cap(e.promptJSON))
	if e.jsonArena != nil {
		jsonHeld = max(jsonHeld, int64(e.jsonArena.Cap()))
	}
	e.size = int64(2*len(e.text)) + jsonHeld + 4*int64(e.enc.HeldIDs()+cap(e.art.GeneratedIDs)) +
		int64(len(e.enc.Boundaries))*(2*32+8) + 256*int64(e.messages) + 512
	if e.items != nil {
		e.size += int64(e.items.Bytes())
	}
	if e.history != nil {
		e.size += e.history.bytes()
	}
	if f := e.fingerprint; f != nil {
		e.size += int64(len(f.tenant) + len(f.kwargs) + len(f.instructions) + len(f.toolsDigest) + 128)
	}
	if e.harmonyDigests != nil {
		e.size += int64(e.harmonyDigests.Bytes()) // msgDigests included
	} else {
		e.size += int64(len(e.msgDigests) * render.DigestSize)
	}
	if e.size > h.maxBytes {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.byKey[e.key]; ok {
		h.remove(el)
	}
	h.byKey[e.key] = h.lru.PushFront(e)
	h.bytes += e.size
	for h.bytes > h.maxBytes {
		h.remove(h.lru.Back())
	}
}

// retire is called when a turn continuing a response committed: the response's entry, if any,
// is dropped once every turn prepared from it committed, and otherwise made the first to be
// evicted.
func (h *HotArtifacts) retire(tenant, responseID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.byKey[hotKey{tenant, responseID}]
	if !ok {
		return
	}
	e := el.Value.(*hotEntry)
	if e.children++; e.children >= e.uses {
		h.remove(el)
		return
	}
	h.lru.MoveToBack(el)
}

// CopyTo puts a copy of a response's entry, if any, into dst, where it is not retired by this
// cache's commits: for a caller that prepares the same turns again later against dst, such as a
// benchmark's timing pass. It reports whether there was an entry.
func (h *HotArtifacts) CopyTo(dst *HotArtifacts, tenant, responseID string) bool {
	h.mu.Lock()
	el, ok := h.byKey[hotKey{tenant, responseID}]
	var e hotEntry
	if ok {
		e = *el.Value.(*hotEntry)
	}
	h.mu.Unlock()
	if !ok {
		return false
	}
	e.uses, e.children = 0, 0
	dst.put(&e)
	return true
}

// Usage returns the estimated bytes and the number of entries held now.
func (h *HotArtifacts) Usage() (bytes int64, entries int) { return h.usage() }

// EntryBytes returns the estimated size of a response's entry (0 when absent).
func (h *HotArtifacts) EntryBytes(tenant, responseID string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.byKey[hotKey{tenant, responseID}]; ok {
		return el.Value.(*hotEntry).size
	}
	return 0
}

// Forget drops a response's entry, if any.
func (h *HotArtifacts) Forget(tenant, responseID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.byKey[hotKey{tenant, responseID}]; ok {
		h.remove(el)
	}
}

func (h *HotArtifacts) remove(el *list.Element) {
	e := h.lru.Remove(el).(*hotEntry)
	delete(h.byKey, e.key)
	h.bytes -= e.size
}

// appendPromptJSON appends ids[from:] to dst as JSON numbers each followed by a comma, from
// table (the model's vocabulary; nil: computed), and sets at[b] to the offset of the id at
// bounds[b].Index for the boundaries from b on.
func appendPromptJSON(dst []byte, table *jsonappend.IDTable, ids []uint32, from int, bounds []render.Boundary, at []int, b int) []byte {
	i := from
	for ; b < len(bounds); b++ {
		if idx := min(bounds[b].Index, len(ids)); idx > i {
			dst = table.AppendEach(dst, ids[i:idx])
			i = idx
		}
		at[b] = len(dst)
	}
	return table.AppendEach(dst, ids[i:])
}

// jsonRoom is the least room, in bytes, a copied prompt JSON gets for the turns after it: about
// as many ids as render's room for the ids themselves, at up to 7 bytes each.
const jsonRoom = 7 * (16 << 10)

// jsonFloor is the least room a short conversation's JSON gets (arena.Room), about as many ids
// as render's floor for the ids themselves.
const jsonFloor = 7 * (1 << 10)

// promptJSON encodes the prompt's ids for the next turn's upstream request: the JSON of
// enc.IDs[:jsonPrefixIDs] (jsonPrefix, with the offsets jsonPrefixAt of its boundaries' ids) is
// kept, in place in the previous turn's arena when the rest fits after it, and the rest is
// encoded, from table (nil: computed). It returns the ids each followed by a comma, the offset of each boundary's id, and the
// arena the JSON lives in.
func (p *pendingArtifact) promptJSON(table *jsonappend.IDTable) ([]byte, []int, *arena.Arena[byte]) {
	if j := p.joined; j != nil {
		at := make([]int, len(p.jsonPrefixAt)+len(j.tailAt))
		copy(at, p.jsonPrefixAt)
		for i, off := range j.tailAt {
			at[len(p.jsonPrefixAt)+i] = len(p.jsonPrefix) + off
		}
		if j.arena != nil {
			return j.js, at, j.arena
		}
		js, a := arena.Join(p.jsonArena, p.jsonBase, len(p.jsonPrefix), j.js, arena.Room(len(p.jsonPrefix)+len(j.js), jsonFloor, jsonRoom))
		return js, at, a
	}
	prefix, prefixAt, reused, enc := p.jsonPrefix, p.jsonPrefixAt, p.jsonPrefixIDs, p.enc
	base, from := p.jsonBase, p.jsonArena
	switch {
	case len(prefix) == 0 || reused <= 0 || reused > len(enc.IDs) || len(prefixAt) > len(enc.Boundaries):
		prefix, prefixAt, reused, base, from = nil, nil, 0, nil, nil
	case len(prefix) > len(base) || unsafe.SliceData(prefix) != unsafe.SliceData(base):
		base, from = prefix, nil // not the previous JSON's first bytes: copied
	}
	at := make([]int, len(enc.Boundaries))
	copy(at, prefixAt)
	tail := appendPromptJSON(make([]byte, 0, 7*(len(enc.IDs)-reused)), table, enc.IDs, reused, enc.Boundaries, at, len(prefixAt))
	for b := len(prefixAt); b < len(at); b++ {
		at[b] += len(prefix)
	}
	js, a := arena.Join(from, base, len(prefix), tail, arena.Room(len(prefix)+len(tail), jsonFloor, jsonRoom))
	return js, at, a
}

// joinedJSON is the JSON of a prepared prompt's ids, each followed by a comma, already in the
// arena of the previous turn's (pendingArtifact.joinJSON), or, with arena nil, the JSON of its
// ids after the reused prefix only, which Commit appends to it. tailAt are the offsets, after
// the reused prefix, of the ids of the boundaries it did not have.
type joinedJSON struct {
	js     []byte
	tailAt []int
	arena  *arena.Arena[byte]
}

// joinJSON encodes the ids after the reused JSON prefix (reuseJSON) and appends them to it where
// that costs no copy of the history: in the previous turn's arena, after its JSON, when they fit
// and follow it (a continuation that kept all of the previous prompt), or in the copy a
// preparation of the same turn made before (a retry). The request then sends the prompt's JSON
// as it is, and Commit keeps it for the next turn instead of encoding the ids a second time.
// Otherwise it reports false: the request encodes the new ids itself, and Commit copies the
// prefix and appends the encoding made here, which takes scratch's buffer. scratch holds the
// encoding meanwhile; its growth is kept for the next call.
func (p *pendingArtifact) joinJSON(table *jsonappend.IDTable, scratch *[]byte) ([]byte, bool) {
	prefix, prefixAt, reused, enc := p.jsonPrefix, p.jsonPrefixAt, p.jsonPrefixIDs, p.enc
	if p.jsonArena == nil || len(prefix) == 0 || reused <= 0 || reused >= len(enc.IDs) || len(prefixAt) > len(enc.Boundaries) ||
		len(prefix) > len(p.jsonBase) || unsafe.SliceData(prefix) != unsafe.SliceData(p.jsonBase) {
		return nil, false
	}
	bounds := enc.Boundaries[len(prefixAt):]
	tailAt := make([]int, len(bounds))
	tail := appendPromptJSON((*scratch)[:0], table, enc.IDs, reused, bounds, tailAt, 0)
	*scratch = tail[:0]
	js, a, ok := arena.Extend(p.jsonArena, p.jsonBase, len(prefix), tail)
	if !ok {
		p.joined = &joinedJSON{js: tail, tailAt: tailAt}
		*scratch = nil // the buffer is the pending turn's now
		return nil, false
	}
	p.joined = &joinedJSON{js: js, tailAt: tailAt, arena: a}
	return js, true
}

// reuseJSON makes the prompt's request, and its commit's JSON for the next turn, reuse hot's
// prompt JSON up to byte keep: the JSON of the prompt's first ids ids, at the offsets of their
// boundaries' ids.
func (p *Prompt) reuseJSON(hot *hotEntry, keep int, at []int, ids int) {
	pd := p.pending
	pd.jsonBase, pd.jsonArena = hot.promptJSON, hot.jsonArena
	pd.jsonPrefix, pd.jsonPrefixAt, pd.jsonPrefixIDs = hot.promptJSON[:keep], at, ids
	p.PromptPrefix, p.PromptPrefixIDs = pd.jsonPrefix, ids
}
