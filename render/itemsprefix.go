package render

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
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
	// messages are the items' messages: the array of the Conversation that built the prefix,
	// shared, since nothing changes a built message but the builder's append of a call to its
	// open assistant turn. That one is messages[open] as it was when the prefix was taken,
	// kept in openMsg with its ToolCalls clipped, so that a resumed turn's append copies.
	messages  []Message
	openMsg   Message
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
	n := 64 + len(p.messages)*messageSize
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
func (d *itemsDigest) resumeInto(b *itemBuilder) int {
	p := d.resume
	if p == nil || p.items == 0 || p.items > d.items || d.sumTo(d.resumeN) != p.digest {
		return 0
	}
	b.conv.Messages = append(b.conv.Messages[:0], p.messages...)
	if p.openSet {
		b.conv.Messages[p.open] = p.openMsg
	}
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
	p := &ItemsPrefix{
		digest: d.sumTo(len(d.buf)), items: k, messages: slices.Clip(b.conv.Messages),
		open: b.open, openSet: b.openSet, reasoning: slices.Clone(b.reasoning), hasReason: b.hasReason,
	}
	if b.openSet {
		p.openMsg = b.conv.Messages[b.open]
		p.openMsg.ToolCalls = slices.Clip(p.openMsg.ToolCalls)
	}
	return p
}
