package render

import (
	"crypto/sha256"
	"encoding"
	"hash"
	"slices"
	"sort"

	"github.com/stitchllm/stitch/internal/arena"
	"github.com/stitchllm/stitch/internal/prefix"
	"github.com/stitchllm/stitch/render/bpe"
)

// span is one added-token match in a text: bytes [Start, End) tokenize to the single id ID. It
// is the tokenizer's own type, so that its matches are used without a copy.
type span = bpe.Span

// segmentEncoder is what the certified suffix needs from the tokenizer: an encoder with
// add_special_tokens=false, and the added-token matches it splits on first.
type segmentEncoder interface {
	AppendEncode(dst []uint32, text string) []uint32
	// AppendEncodeTail encodes text that starts at an added-token boundary after offset 0 (a
	// Metaspace "first" tokenizer prepends "▁" at offset 0 alone; bpe.Tokenizer.AppendEncodeTail).
	AppendEncodeTail(dst []uint32, text string) []uint32
	addedSpans(text string) []span
}

// encodeAt appends the ids of text, a piece of a prompt that starts at offset off, which is 0 or
// an added-token boundary.
func encodeAt(enc segmentEncoder, dst []uint32, text string, off int) []uint32 {
	if off == 0 {
		return enc.AppendEncode(dst, text)
	}
	return enc.AppendEncodeTail(dst, text)
}

// Boundary is a point of a prompt text where tokenization splits independently: here, the start
// of an added-token match. ids[:Index] is exactly the encoding of text[:Offset], and
// Digest (the first 16 bytes of SHA-256 of text[:Offset]) lets a later text be compared with this
// one without keeping the text.
type Boundary struct {
	Offset int
	Index  int
	Digest [DigestSize]byte
}

// DigestSize is the length of a Boundary digest: SHA-256 truncated to 128 bits, plenty against
// accidental collisions; artifacts are MAC'd against forgery.
const DigestSize = 16

// prefixDigest returns the truncated digest of everything h has consumed so far.
func prefixDigest(h hash.Hash) (d [DigestSize]byte) {
	var full [sha256.Size]byte
	copy(d[:], h.Sum(full[:0]))
	return d
}

// Encoding is a prompt's token ids with its boundary table (ascending offsets; offset 0 is
// never listed; about one boundary per special token, e.g. two per Qwen3 message). It is what a token artifact keeps to extend the prompt next turn.
type Encoding struct {
	IDs        []uint32
	Boundaries []Boundary

	// arena is where IDs lives when ExtendText made it, so that the next turn's ExtendText can
	// append to it in place; nil otherwise. Copies of the Encoding share it.
	arena *arena.Arena[uint32]
	// states are the SHA-256 states after the text up to a few of the last boundaries
	// (fillDigests keeps them, ExtendText hands on those of the boundaries it reused), so that
	// the next turn's fillDigests hashes from the boundary its ExtendText reused instead of from
	// the start of the conversation. Immutable; copies share them.
	states []hashState
}

// hashState is the marshaled SHA-256 state after text[:Boundaries[at].Offset].
type hashState struct {
	at    int
	state []byte
}

// keptStates is how many of the last boundaries fillDigests keeps a hash state for: a
// continuation's reused boundary is one of the previous prompt's last few (the generation
// prompt's added tokens come after it), unless the template changed an earlier message.
const keptStates = 4

// Reuse reports how much of a previous Encoding an Extend kept.
type Reuse struct {
	// Offset is the text offset of the boundary used (0: nothing reused).
	Offset int
	// Tokens is the number of leading ids copied from the previous encoding.
	Tokens int
}

// encodeWithBoundaries encodes text segment by segment between added-token matches,
// recording a boundary (with its prefix digest) at every match start. Match ends are valid
// boundaries too, but one past a start they save only that single added-token id while doubling
// the table and the digest work.
func encodeWithBoundaries(enc segmentEncoder, text string) Encoding {
	spans := enc.addedSpans(text)
	var e Encoding
	e.IDs = make([]uint32, 0, len(text)/3+len(spans)+1)
	e.Boundaries = make([]Boundary, 0, 2*len(spans))
	h := sha256.New()
	pos := 0
	for _, s := range spans {
		e.IDs = encodeAt(enc, e.IDs, text[pos:s.Start], pos)
		writeString(h, text[pos:s.Start])
		e.Boundaries = addBoundary(e.Boundaries, h, s.Start, len(e.IDs))
		e.IDs = append(e.IDs, s.ID)
		writeString(h, text[s.Start:s.End])
		pos = s.End
	}
	e.IDs = encodeAt(enc, e.IDs, text[pos:], pos)
	return e
}

func addBoundary(b []Boundary, h hash.Hash, offset, index int) []Boundary {
	if offset == 0 || (len(b) > 0 && b[len(b)-1].Offset == offset) {
		return b
	}
	return append(b, Boundary{Offset: offset, Index: index, Digest: prefixDigest(h)})
}

func writeString(h hash.Hash, s string) {
	if len(s) > 0 {
		h.Write([]byte(s)) // sha256 never fails; the conversion is cheap next to hashing
	}
}

// extend encodes next reusing prev: it finds the last offset o that is a boundary of both texts
// and where their prefixes are equal (by digest), and returns prev.IDs[:k] followed by the
// encoding of next[o:]. The result equals encodeWithBoundaries(enc, next) exactly: o must be a
// boundary of next too, because text after o can turn characters before o into an added-token
// match ("<" + "think>").
func extend(enc segmentEncoder, prev Encoding, next string) (Encoding, Reuse) {
	spans := enc.addedSpans(next)
	// Pass 1: digests at every boundary of next; find the last common, equal one.
	type mark struct {
		offset int
		digest [DigestSize]byte
	}
	marks := make([]mark, 0, 2*len(spans))
	h := sha256.New()
	pos := 0
	add := func(off int) {
		if off == 0 || (len(marks) > 0 && marks[len(marks)-1].offset == off) {
			return
		}
		marks = append(marks, mark{offset: off, digest: prefixDigest(h)})
	}
	for _, s := range spans {
		writeString(h, next[pos:s.Start])
		add(s.Start)
		writeString(h, next[s.Start:s.End])
		pos = s.End
	}
	best := -1 // index into prev.Boundaries
	j := 0
	for _, m := range marks {
		for j < len(prev.Boundaries) && prev.Boundaries[j].Offset < m.offset {
			j++
		}
		if j == len(prev.Boundaries) {
			break
		}
		if prev.Boundaries[j].Offset != m.offset {
			continue
		}
		if prev.Boundaries[j].Digest != m.digest {
			break // prefixes differ here, so at every later offset too
		}
		best = j
	}
	var reuse Reuse
	out := Encoding{Boundaries: make([]Boundary, 0, len(marks))}
	if best >= 0 {
		b := prev.Boundaries[best]
		if b.Index >= 0 && b.Index <= len(prev.IDs) {
			reuse = Reuse{Offset: b.Offset, Tokens: b.Index}
			out.Boundaries = append(out.Boundaries, prev.Boundaries[:best+1]...)
		}
	}
	out.IDs = make([]uint32, 0, reuse.Tokens+(len(next)-reuse.Offset)/3+len(spans)+1)
	out.IDs = append(out.IDs, prev.IDs[:reuse.Tokens]...)
	// Pass 2: encode from the reused offset, which is 0 or a span start of next.
	first := sort.Search(len(spans), func(i int) bool { return spans[i].End > reuse.Offset })
	pos = reuse.Offset
	mi := sort.Search(len(marks), func(i int) bool { return marks[i].offset > reuse.Offset })
	record := func(off int) {
		if mi < len(marks) && marks[mi].offset == off {
			out.Boundaries = append(out.Boundaries, Boundary{Offset: off, Index: len(out.IDs), Digest: marks[mi].digest})
			mi++
		}
	}
	for _, s := range spans[first:] {
		out.IDs = encodeAt(enc, out.IDs, next[pos:s.Start], pos)
		record(s.Start)
		out.IDs = append(out.IDs, s.ID)
		pos = s.End
	}
	out.IDs = encodeAt(enc, out.IDs, next[pos:], pos)
	return out, reuse
}

// extendText is extend for a previous encoding whose text is at hand (the process rendered it):
// the texts are compared directly, and only next's tail after the reused boundary is scanned for
// added tokens and tokenized, so the cost follows the change, not the conversation. A previous
// boundary at offset o is reused when next agrees with prevText up to o+maxAdded: the added-token
// matcher decides every match up to and including the one at o from those bytes alone (it is
// leftmost-first and reads at most maxAdded bytes from a position), so o is a boundary of next
// too. The ids and boundary offsets equal encodeWithBoundaries(enc, next); boundaries from index
// fresh on have no digest yet (fillDigests computes them when the artifact is written). The
// first known bytes of the texts are taken as equal without comparing them.
// scratch holds the tail's ids while they are encoded (joinIDs copies them); its growth is kept
// for the next call.
func extendText(enc segmentEncoder, maxAdded int, prev Encoding, prevText, next string, known int, scratch *[]uint32) (out Encoding, reuse Reuse, fresh int) {
	known = max(0, min(known, len(prevText), len(next)))
	lcp := known + prefix.Len(prevText[known:], next[known:])
	best := sort.Search(len(prev.Boundaries), func(i int) bool { return prev.Boundaries[i].Offset+maxAdded > lcp }) - 1
	if best >= 0 {
		b := prev.Boundaries[best]
		if b.Offset <= len(prevText) && b.Index >= 0 && b.Index <= len(prev.IDs) {
			reuse = Reuse{Offset: b.Offset, Tokens: b.Index}
		} else {
			best = -1
		}
	}
	spans := enc.addedSpans(next[reuse.Offset:])
	if reuse.Offset > 0 && (len(spans) == 0 || spans[0].Start != 0) {
		// Cannot happen (see above); never guess.
		return encodeWithBoundaries(enc, next), Reuse{}, 0
	}
	out.Boundaries = make([]Boundary, 0, best+1+2*len(spans))
	out.Boundaries = append(out.Boundaries, prev.Boundaries[:best+1]...)
	out.states = statesUpTo(prev.states, best)
	fresh = len(out.Boundaries)
	// The tail's ids first, on their own: joinIDs then appends them to the reused ones, in place
	// when prev's ids have room for them (see arena.Join).
	tail := slices.Grow((*scratch)[:0], (len(next)-reuse.Offset)/3+len(spans)+1)
	defer func() { *scratch = tail[:0] }()
	pieces := prevPieces{enc: enc, prev: prev, text: prevText, from: reuse.Offset}
	pos := reuse.Offset
	for _, s := range spans {
		start, end := reuse.Offset+s.Start, reuse.Offset+s.End
		tail = pieces.encode(tail, next[pos:start], pos)
		if start != 0 && (len(out.Boundaries) == 0 || out.Boundaries[len(out.Boundaries)-1].Offset != start) {
			out.Boundaries = append(out.Boundaries, Boundary{Offset: start, Index: reuse.Tokens + len(tail)})
		}
		tail = append(tail, s.ID)
		pos = end
	}
	tail = pieces.encode(tail, next[pos:], pos)
	out.IDs, out.arena = joinIDs(prev, reuse.Tokens, tail)
	return out, reuse, fresh
}

// minPiece is the shortest piece whose ids prevPieces looks up instead of tokenizing it: below
// it, the tokenizer costs about what the lookup does.
const minPiece = 128

// prevPieces finds, for a piece of the new text between two added tokens, the ids of the same
// bytes in the previous prompt after its reused boundary. A template that changes a message
// before others (Qwen3 drops the reasoning of the turns before a new user query, and so do
// DeepSeek's and Mistral's) leaves the previous prompt's later pieces (tool outputs, calls)
// unchanged but shifted: their ids are copied instead of tokenized again. A piece between added
// tokens tokenizes on its own (the tokenizer splits on added tokens first, as Hugging Face's
// AddedVocabulary does), so its ids are the same wherever it sits; the previous encoding's ids
// for it are found through its boundaries, and a piece whose boundaries do not check out is
// tokenized instead.
type prevPieces struct {
	enc  segmentEncoder
	prev Encoding
	text string
	from int // the reused boundary: prev's pieces after it are candidates
	// list is filled on the first lookup; next is where the following lookup starts (pieces
	// usually recur in order).
	list   []piece
	listed bool
	next   int
}

// piece is one previous piece: text[start:end] encodes to prev.IDs[ids:idsEnd].
type piece struct{ start, end, ids, idsEnd int }

// encode appends the ids of text, a piece of the new prompt at offset off (0 or an added-token
// boundary): copied from the previous prompt when it holds the same piece, else tokenized.
func (p *prevPieces) encode(dst []uint32, text string, off int) []uint32 {
	if off > 0 && len(text) >= minPiece && len(p.text)-p.from >= minPiece {
		if ids, ok := p.find(text); ok {
			return append(dst, ids...)
		}
	}
	return encodeAt(p.enc, dst, text, off)
}

func (p *prevPieces) find(text string) ([]uint32, bool) {
	if !p.listed {
		p.listed = true
		p.list = p.pieces()
	}
	for k := range p.list {
		i := (p.next + k) % len(p.list)
		c := p.list[i]
		if c.end-c.start == len(text) && p.text[c.start:c.end] == text {
			p.next = i + 1
			return p.prev.IDs[c.ids:c.idsEnd], true
		}
	}
	return nil, false
}

// pieces lists prev's pieces after from of at least minPiece bytes: each between an added token
// whose boundary prev records, with that token's id just before the piece's ids, and the next
// added token (likewise checked) or the end of the text.
func (p *prevPieces) pieces() []piece {
	spans := p.enc.addedSpans(p.text[p.from:])
	// tokenAt is the index in prev.IDs of the added token starting at offset o, -1 if prev's
	// boundaries do not place one there.
	tokenAt := func(o int, id uint32) int {
		i := sort.Search(len(p.prev.Boundaries), func(i int) bool { return p.prev.Boundaries[i].Offset >= o })
		if i == len(p.prev.Boundaries) || p.prev.Boundaries[i].Offset != o {
			return -1
		}
		if at := p.prev.Boundaries[i].Index; at >= 0 && at < len(p.prev.IDs) && p.prev.IDs[at] == id {
			return at
		}
		return -1
	}
	var out []piece
	for i, s := range spans {
		start, end := p.from+s.End, len(p.text)
		if i+1 < len(spans) {
			end = p.from + spans[i+1].Start
		}
		if end-start < minPiece || p.from+s.Start == 0 {
			continue
		}
		at := tokenAt(p.from+s.Start, s.ID)
		if at < 0 {
			continue
		}
		idsEnd := len(p.prev.IDs)
		if i+1 < len(spans) {
			if idsEnd = tokenAt(end, spans[i+1].ID); idsEnd < 0 {
				continue
			}
		} else if end != len(p.text) {
			continue
		}
		if at+1 <= idsEnd {
			out = append(out, piece{start: start, end: end, ids: at + 1, idsEnd: idsEnd})
		}
	}
	return out
}

// idRoom is the least room, in ids, a copied encoding gets for the turns after it (a few turns
// of an agent conversation); it also gets a quarter of its length (jinja.arenaSpare's trade of
// memory for copies).
const idRoom = 16 << 10

// idFloor is the least room a short conversation's ids get (arena.Room: twice their number
// above it), so that a cache of many short conversations does not hold idRoom for each.
const idFloor = 1 << 10

// HeldIDs returns how many ids the encoding keeps in memory: its arena's whole array (the room
// after its ids included) when it has one, else the capacity of IDs. A cache that keeps the
// encoding accounts that, not len(IDs).
func (e Encoding) HeldIDs() int {
	if e.arena != nil {
		return max(e.arena.Cap(), cap(e.IDs))
	}
	return cap(e.IDs)
}

// JoinIDs returns the Encoding (without boundaries) of prev.IDs[:keep] followed by tail: written
// after prev's ids in the arena they share when it has room and holds nothing else there (a
// continuation that keeps all of the previous prompt costs only its own ids), else copied with
// room for later turns (arena.Join). prev is not changed. For a caller that builds its prompt's
// ids itself (Harmony).
func JoinIDs(prev Encoding, keep int, tail []uint32) Encoding {
	ids, a := joinIDs(prev, keep, tail)
	return Encoding{IDs: ids, arena: a}
}

// joinIDs returns prev.IDs[:keep] followed by tail, and the arena it lives in, appended in place
// when prev's ids have room for them (arena.Join).
func joinIDs(prev Encoding, keep int, tail []uint32) ([]uint32, *arena.Arena[uint32]) {
	return arena.Join(prev.arena, prev.IDs, keep, tail, arena.Room(keep+len(tail), idFloor, idRoom))
}

// fillDigests sets the prefix digests of e.Boundaries[from:] for text and returns the digest of
// the whole text, hashing it once: from the hash state e keeps for boundary from-1 when it has
// one (the reused boundary of a continuation), else from the start. It keeps the states of the
// last keptStates boundaries in e for the next turn.
func fillDigests(text string, e *Encoding, from int) [DigestSize]byte {
	h := sha256.New()
	pos, first := 0, 0
	if st := stateAt(e.states, from-1); st != nil && from-1 < len(e.Boundaries) && e.Boundaries[from-1].Offset <= len(text) {
		if h.(encoding.BinaryUnmarshaler).UnmarshalBinary(st) == nil {
			pos, first = e.Boundaries[from-1].Offset, from
		} else {
			h.Reset()
		}
	}
	keepFrom := len(e.Boundaries) - keptStates
	var states []hashState
	for _, st := range e.states {
		if st.at >= keepFrom && st.at < first {
			states = append(states, st)
		}
	}
	for i := first; i < len(e.Boundaries); i++ {
		if i < from && i < keepFrom {
			continue // neither a digest nor a state wanted: hashed with the next one's bytes
		}
		b := &e.Boundaries[i]
		writeString(h, text[pos:b.Offset])
		pos = b.Offset
		if i >= from {
			b.Digest = prefixDigest(h)
		}
		if i >= keepFrom {
			if st, err := h.(encoding.BinaryMarshaler).MarshalBinary(); err == nil {
				states = append(states, hashState{at: i, state: st})
			}
		}
	}
	writeString(h, text[pos:])
	e.states = states
	return prefixDigest(h)
}

// stateAt returns the state kept for boundary i, nil if none.
func stateAt(states []hashState, i int) []byte {
	for _, st := range states {
		if st.at == i {
			return st.state
		}
	}
	return nil
}

// statesUpTo returns the states of boundaries up to i (a new slice: states are shared).
func statesUpTo(states []hashState, i int) []hashState {
	var out []hashState
	for _, st := range states {
		if st.at <= i {
			out = append(out, st)
		}
	}
	return out
}
