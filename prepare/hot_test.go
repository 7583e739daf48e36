package prepare

import (
	"testing"
	"time"

	"github.com/stitchllm/stitch/internal/arena"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/store"
)

func hotTestEntry(id string, textLen int, expires time.Time) *hotEntry {
	return &hotEntry{
		key:  hotKey{"t", id},
		art:  &store.Artifact{Tenant: "t", ResponseID: id, ExpiresAt: expires},
		text: string(make([]byte, textLen)),
		enc:  render.Encoding{IDs: make([]uint32, textLen/4)},
	}
}

// TestHotArtifactsBoundAndOrder: the cache never holds more than its bound, evicts the least
// recently used entry first, demoted (partly retired) entries before everything else, and drops expired entries.
func TestHotArtifactsBoundAndOrder(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	one := hotTestEntry("x", 1000, later)
	probe := NewHotArtifacts(1<<30, nil)
	probe.put(one)
	size := one.size
	h := NewHotArtifacts(3*size, nil)
	for _, id := range []string{"a", "b", "c"} {
		h.put(hotTestEntry(id, 1000, later))
	}
	if h.get("t", "a", now) == nil { // a becomes the most recent
		t.Fatal("a missing")
	}
	h.put(hotTestEntry("d", 1000, later)) // evicts b, the least recently used
	if h.get("t", "b", now) != nil || h.get("t", "a", now) == nil {
		t.Fatal("LRU order not kept")
	}
	h.retire("t", "a")                    // one of the two turns prepared from a committed: demoted
	h.put(hotTestEntry("e", 1000, later)) // evicts the demoted a, not c
	if h.get("t", "a", now) != nil || h.get("t", "c", now) == nil {
		t.Fatal("demoted entry not evicted first")
	}
	if b, n := h.usage(); b > 3*size || n != 3 {
		t.Fatalf("usage %d bytes, %d entries; bound %d", b, n, 3*size)
	}
	if h.get("t", "c", later) != nil {
		t.Fatal("expired entry returned")
	}
	if h.get("other", "d", now) != nil {
		t.Fatal("another tenant's key found")
	}
	h.put(hotTestEntry("huge", int(4*size), later))
	if h.get("t", "huge", now) != nil {
		t.Fatal("an entry larger than the bound was kept")
	}
}

// TestHotArtifactsRetire: committing a turn retires the entry it continued once every turn
// prepared from it committed, so a conversation keeps one entry, its head; a branch still in
// flight keeps its parent's entry until it commits too.
func TestHotArtifactsRetire(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	h := NewHotArtifacts(1<<30, nil)
	h.put(hotTestEntry("p", 1000, now.Add(time.Hour)))
	for range 2 { // two turns continue p (each get counts a user of the entry)
		if h.get("t", "p", now) == nil {
			t.Fatal("p missing")
		}
	}
	h.put(hotTestEntry("c1", 1000, now.Add(time.Hour)))
	h.retire("t", "p") // c1 committed; the other branch has not
	if _, n := h.usage(); n != 2 || h.EntryBytes("t", "p") == 0 {
		t.Fatalf("%d entries after the first branch committed; want p kept for the second", n)
	}
	h.put(hotTestEntry("c2", 1000, now.Add(time.Hour)))
	held := NewHotArtifacts(1<<30, nil)
	if !h.CopyTo(held, "t", "p") || h.CopyTo(held, "t", "absent") {
		t.Fatal("CopyTo copied the wrong entries")
	}
	h.retire("t", "p")
	if held.get("t", "p", now) == nil {
		t.Fatal("the copy was retired with the original")
	}
	if _, n := h.usage(); n != 2 || h.EntryBytes("t", "p") != 0 {
		t.Fatalf("%d entries after both branches committed (p kept: %v); want c1 and c2", n, h.EntryBytes("t", "p") != 0)
	}
	h.retire("t", "absent") // nothing to retire
	if b, n := h.usage(); n != 2 || b != h.EntryBytes("t", "c1")+h.EntryBytes("t", "c2") {
		t.Fatalf("usage %d bytes in %d entries", b, n)
	}
}

// TestHotEntryCountsArenas: an entry is counted by the arrays it keeps alive, the room of its
// ids' and JSON's arenas included (issue 31: a cache of short conversations counted their
// lengths while their arenas' room held most of the heap), and a short conversation's arenas
// hold a few times its ids, not render's whole room.
func TestHotEntryCountsArenas(t *testing.T) {
	ids := make([]uint32, 300)
	enc := render.JoinIDs(render.Encoding{}, 0, ids)
	js, jsonArena := arena.Join[byte](nil, nil, 0, make([]byte, 7*len(ids)), arena.Room(7*len(ids), jsonFloor, jsonRoom))
	e := &hotEntry{key: hotKey{"t", "r"}, art: &store.Artifact{Tenant: "t", ResponseID: "r", PromptIDs: enc.IDs},
		text: string(make([]byte, 4*len(ids))), enc: enc, promptJSON: js, jsonArena: jsonArena}
	NewHotArtifacts(1<<30, nil).put(e)
	held := int64(4*enc.HeldIDs() + jsonArena.Cap())
	if enc.HeldIDs() <= len(ids) || jsonArena.Cap() <= len(js) {
		t.Fatalf("no room after the ids (%d of %d) or the JSON (%d of %d)", len(ids), enc.HeldIDs(), len(js), jsonArena.Cap())
	}
	if e.size < held+int64(2*len(e.text)) {
		t.Errorf("entry counted %d bytes; its arrays hold %d and its text %d", e.size, held, len(e.text))
	}
	if enc.HeldIDs() > 8*len(ids) || jsonArena.Cap() > 8*len(js) {
		t.Errorf("a %d-id conversation keeps %d ids and %d JSON bytes for %d", len(ids), enc.HeldIDs(), jsonArena.Cap(), len(js))
	}
}
