package render

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
)

// ItemsPrefix is the state FromResponses reached after a conversation's stored items: the
// messages they built and the item builder's open turn. The next turn of the conversation reads
// the same stored items again, plus the ones the previous turn added; resuming from its prefix
// (ResponsesInput.Resume) maps only those instead of looking up every earlier item in the
// ItemCache (issue 20: ~120 lookups for a 100k-token history, 30–100 µs a turn, most of it
// cache misses on memory no later step needs). Immutable once built; turns that resume it share
// it.
type ItemsPrefix struct {
	// digest identifies what the messages were built from (itemsDigest): the instructions, the
	// tenant, and each item's stored id and length, hashed under the ItemCache's secret
	// seed, so a prefix only ever resumes a conversation of the same cache. The bytes themselves are not
	// read: the store keeps an item's bytes under its id (store.Checkpoints: other bytes get a
	// derived id) and keeps a checkpoint's items as long as the checkpoint, which this turn
	// continues. The background audit re-maps the items (prepare's RenderConversation).
	digest uint64
	items  int
	// messages are the items' messages, published in arena (its first ones): never written
	// again. A turn resuming the prefix begins with them and appends its own after them there
	// instead of copying them (messageArena); one that must change one (a call joining the open
	// assistant turn, messages[open]) copies them first (itemBuilder.message).
	messages  []Message
	arena     *messageArena
	open      int
	openSet   bool
	reasoning []string
	hasReason bool
}

// Items returns the number of stored items the prefix covers.
func (p *ItemsPrefix) Items() int { return p.items }

// Bytes estimates the memory the prefix holds beyond the strings it shares with the ItemCache.
func (p *ItemsPrefix) Bytes() int {
	const messageSize = 160 // unsafe.Sizeof(Message{}) on 64-bit platforms, rounded up
	n := 64 + max(len(p.messages), p.arena.size())*messageSize
	for i := range p.messages {
		n += len(p.messages[i].ToolCalls) * 96
	}
	return n
}

// itemsDigest computes the digests of a request's stored items as an ItemsPrefix records them:
// of Items[:k] for the prefix to resume (k = its items) and of all stored items for the one to
// keep. The bytes hashed are gathered in one buffer and hashed in one pass (maphash.Hash's sum
// depends only on the bytes written, however they are split): its buffered small writes cost
// more than the bytes.
type itemsDigest struct {
	buf     []byte
	resume  *ItemsPrefix // the prefix to resume (ResponsesInput.Resume), nil: none
	resumeN int          // len(buf) after its items, when it covers no more than the stored ones
	h       maphash.Hash
	hashed  int // buf[:hashed] has been written to h
	items   int // stored items
}

// newItemsDigest returns the digest state of in's stored items (in.Cache is set), from the
// cache's pool: release it when done with it.
func newItemsDigest(in *ResponsesInput) *itemsDigest {
	n := len(in.StoredIDs)
	size := 16 + len(in.Instructions) + len(in.Tenant) + 16*n
	for _, id := range in.StoredIDs {
		size += len(id)
	}
	d, _ := in.Cache.digests.Get().(*itemsDigest)
	if d == nil {
		d = new(itemsDigest)
	}
	*d = itemsDigest{buf: slices.Grow(d.buf[:0], size), resume: in.Resume, items: n}
	d.h.SetSeed(in.Cache.prefixSeed)
	d.buf = appendString(d.buf, in.Instructions)
	d.buf = appendString(d.buf, in.Tenant)
	for i, id := range in.StoredIDs {
		if d.resume != nil && i == d.resume.items {
			d.resumeN = len(d.buf)
		}
		d.buf = appendString(d.buf, id)
		d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(len(in.Items[i])))
	}
	if d.resume != nil && d.resume.items == n {
		d.resumeN = len(d.buf)
	}
	return d
}

// maxPooledDigest is the largest buffer an itemsDigest keeps when released: about 20k stored
// items' ids.
const maxPooledDigest = 1 << 20

// release returns d to c's pool. d is not used after.
func (d *itemsDigest) release(c *ItemCache) {
	if cap(d.buf) > maxPooledDigest {
		return
	}
	*d = itemsDigest{buf: d.buf[:0]}
	c.digests.Put(d)
}

func appendString(b []byte, s string) []byte {
	return append(binary.LittleEndian.AppendUint64(b, uint64(len(s))), s...)
}

// sumTo returns the digest of buf[:n], n never less than the previous call's.
func (d *itemsDigest) sumTo(n int) uint64 {
	_, _ = d.h.Write(d.buf[d.hashed:n])
	d.hashed = n
	return d.h.Sum64()
}

// resumeInto starts b from the prefix to resume when it covers the first stored items of the
// input (same cache, digest equal over its items), returning the index of the first item still
// to apply; 0 when it does not fit.
// The conversation begins with the prefix's messages, not a copy of them; items is the number
// of the input's items, which the messages after them are sized for.
func (d *itemsDigest) resumeInto(b *itemBuilder, items int) int {
	p := d.resume
	if p == nil || p.items == 0 || p.items > d.items || d.sumTo(d.resumeN) != p.digest {
		return 0
	}
	b.arena, b.shared = p.arena, p.messages
	b.conv.Messages = make([]Message, 0, items-p.items+1)
	b.open, b.openSet = p.open, p.openSet
	b.reasoning, b.hasReason = slices.Clip(p.reasoning), p.hasReason
	return p.items
}

// prefixAfter records b's state after the stored items as an ItemsPrefix (nil without any):
// the resumed prefix itself when b resumed from it at that very item (a retried request).
func (d *itemsDigest) prefixAfter(b *itemBuilder, resumedItems int) *ItemsPrefix {
	k := d.items
	if k == 0 {
		return nil
	}
	if resumedItems == k {
		return d.resume
	}
	b.publish()
	return &ItemsPrefix{
		digest: d.sumTo(len(d.buf)), items: k, messages: b.shared, arena: b.arena,
		open: b.open, openSet: b.openSet, reasoning: slices.Clone(b.reasoning), hasReason: b.hasReason,
	}
}

// messageRoom is the room for later messages an array of n messages gets when it becomes an
// arena: a few turns' worth (an agent turn adds three or four: output, call, its result), a
// quarter of the conversation for a long one, so that copies stay rare as it grows.
func messageRoom(n int) int { return max(16, n/4) }

// messageArena is the backing array a conversation's turns share for their messages, each
// turn's ItemsPrefix a prefix of the next's, as arena.Arena is for the prompt ids: a turn that
// resumes a prefix appends the messages its items add after it, in the room, instead of copying
// every earlier message (~17 KB of Messages, and the allocation, at 100k tokens). buf[:used]
// are published: never written again, so every slice of them stays valid. A turn whose
// messages after the prefix agree with those published there (the same turn prepared again, or
// the next turn, whose first new items are the previous turn's input) shares them; one that
// differs, or does not fit, copies.
type messageArena struct {
	mu   sync.Mutex
	buf  []Message // the whole backing array (len == cap)
	used int
}

// size is the number of messages the arena's array holds, used or not (0 for nil).
func (a *messageArena) size() int {
	if a == nil {
		return 0
	}
	return len(a.buf) // written once, when the arena is made
}

// extend returns shared followed by more in a's array, when shared is published in it and every
// message already published after shared equals more's; the rest of more is published in the
// room when it fits. Otherwise it reports false.
func (a *messageArena) extend(shared, more []Message) ([]Message, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	start, end := len(shared), len(shared)+len(more)
	if start == 0 || start > a.used || end > len(a.buf) || &a.buf[0] != &shared[0] {
		return nil, false
	}
	written := min(a.used, end) - start
	for i := range written {
		if !equalMessages(&a.buf[start+i], &more[i]) {
			return nil, false
		}
	}
	if end > a.used {
		copy(a.buf[a.used:end], more[written:])
		a.used = end
	}
	return a.buf[:end:end], true
}

// equalMessages reports whether a and b hold the same values: every field of Message, the
// strings behind its pointers compared, not the pointers.
func equalMessages(a, b *Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.NullContent == b.NullContent &&
		(a.Parts == nil) == (b.Parts == nil) && slices.Equal(a.Parts, b.Parts) &&
		(a.ToolCalls == nil) == (b.ToolCalls == nil) &&
		slices.EqualFunc(a.ToolCalls, b.ToolCalls, func(x, y ToolCall) bool {
			return x.ID == y.ID && x.Type == y.Type && x.Name == y.Name &&
				(x.Arguments == nil) == (y.Arguments == nil) && bytes.Equal(x.Arguments, y.Arguments)
		}) &&
		equalOptional(a.Reasoning, b.Reasoning) && equalOptional(a.ToolCallID, b.ToolCallID) &&
		equalOptional(a.Name, b.Name) && equalOptional(a.Task, b.Task)
}

func equalOptional(a, b *string) bool { return a == b || a != nil && b != nil && *a == *b }
