package bpe

import (
	"fmt"
	"slices"
	"strings"
)

// vocabEntry is one "token": id pair of model.vocab during loading; the token's bytes are
// arena[start:end] (its raw bytes when spelled in the byte-level alphabet, else its UTF-8).
type vocabEntry struct {
	start, end uint32
	id         uint32
	alphabet   bool
}

// build turns the parsed parts into a Tokenizer.
func (l *loader) build() (*Tokenizer, error) {
	t := &Tokenizer{
		alpha:        newByteLevelAlphabet(),
		split:        l.split,
		normalize:    l.normalizeNFC,
		ignoreMerges: l.model.IgnoreMerges,
		post:         l.post,
		notes:        l.notes,
	}
	// Pass 1: copy every vocab token's bytes into one arena. Raw bytes are never longer than the
	// JSON that spells them, so the arena never grows and its final size is known up front.
	arena := make([]byte, 0, len(l.vocab)+addedBytes(l.added))
	entries := make([]vocabEntry, 0, len(l.vocab)/12)
	var maxID uint32
	sc := jsonScanner{s: l.vocab}
	sc.objectEntries(func(tok string, id uint32) bool {
		start := len(arena)
		var ok bool
		arena, ok = t.alpha.appendDecoded(arena, tok)
		if !ok {
			arena = append(arena, tok...)
		}
		maxID = max(maxID, id)
		entries = append(entries, vocabEntry{start: uint32(start), end: uint32(len(arena)), id: id, alphabet: ok})
		return true
	})
	if sc.err != nil {
		return nil, fmt.Errorf("model.vocab: %w", sc.err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: empty vocab", ErrInvalid)
	}
	addedStart := len(arena)
	for _, a := range l.added {
		maxID = max(maxID, a.ID)
		// Decoding spells an added token like any other: its content through the byte-level
		// alphabet when every code point is in it, else verbatim (the Rust ByteLevel decoder).
		var ok bool
		arena, ok = t.alpha.appendDecoded(arena, a.Content)
		if !ok {
			arena = append(arena, a.Content...)
		}
	}
	// Tables are indexed by id: refuse ids far beyond the number of tokens (real vocabularies are
	// dense) rather than allocate gigabytes for a corrupt or hostile file.
	if n := len(entries) + len(l.added); int64(maxID) > 2*int64(n)+1024 {
		return nil, unsupported("sparse token ids: largest id %d for %d tokens", maxID, n)
	}
	t.arena = string(arena)
	t.vocabSize = int(maxID) + 1
	t.tokSpans = make([]uint32, 2*t.vocabSize)
	t.known = make([]uint64, (t.vocabSize+63)/64)

	// Pass 2: index the vocabulary by raw bytes (tokens spelled in the alphabet, which are all a
	// byte-level pre-token can ever be) or by their JSON spelling (the rest).
	t.vocab = newVocabTable(len(entries), t.arena, t.tokSpans)
	for _, e := range entries {
		if t.isKnown(e.id) {
			return nil, fmt.Errorf("%w: vocab id %d is used twice", ErrInvalid, e.id)
		}
		t.setKnown(e.id)
		t.tokSpans[2*e.id], t.tokSpans[2*e.id+1] = e.start, e.end
		if e.alphabet {
			if !t.vocab.put(e.id) {
				return nil, fmt.Errorf("%w: vocab token %q listed twice", ErrInvalid, t.arena[e.start:e.end])
			}
		} else {
			if t.others == nil {
				t.others = map[string]uint32{}
			}
			t.others[t.arena[e.start:e.end]] = e.id
		}
	}
	for b := range 256 {
		id, ok := t.vocab.getBytes([]byte{byte(b)})
		if !ok {
			return nil, unsupported("vocab without the byte-level token %q for byte 0x%02x", string(t.alpha.char[b]), b)
		}
		t.byteID[b] = id
	}
	if err := t.checkAddedIDs(l.added, len(entries)); err != nil {
		return nil, err
	}
	if err := t.buildAdded(l.added, addedStart); err != nil {
		return nil, err
	}
	if err := t.buildMerges(l.merges); err != nil {
		return nil, err
	}
	t.bytePairs = make([]uint64, 1<<16)
	for i := range t.bytePairs {
		r, m := t.pairRank(t.byteID[i>>8], t.byteID[i&0xFF])
		t.bytePairs[i] = uint64(r)<<32 | uint64(m)
	}
	t.cache = newWordCache(defaultCacheWords)
	return t, nil
}

func addedBytes(added []addedTokenJSON) int {
	n := 0
	for _, a := range added {
		n += len(a.Content)
	}
	return n
}

// checkAddedIDs refuses added tokens whose id in tokenizer.json is not the one the Rust crate
// gives them: it ignores the listed ids and assigns, in list order, the vocab id of a content that
// is a vocab token, else the next id after the vocab (vocabLen entries) and the added tokens so far.
func (t *Tokenizer) checkAddedIDs(added []addedTokenJSON, vocabLen int) error {
	var (
		maxAdded uint32
		any      bool
	)
	for _, a := range added {
		want, ok := t.lookupSpelling(a.Content)
		if !ok {
			switch {
			case !any:
				want = uint32(vocabLen)
			case maxAdded >= uint32(vocabLen) || vocabLen == 0:
				want = maxAdded + 1
			default:
				want = uint32(vocabLen)
			}
		}
		if a.ID != want {
			return unsupported("added token %q: id %d in tokenizer.json, but the Rust crate assigns %d", a.Content, a.ID, want)
		}
		maxAdded, any = max(maxAdded, want), true
	}
	return nil
}

// buildAdded indexes the added tokens; their decode spellings follow addedStart in the arena.
func (t *Tokenizer) buildAdded(added []addedTokenJSON, addedStart int) error {
	t.addedByContent = make(map[string]uint32, len(added))
	off := uint32(addedStart)
	seenID := make(map[uint32]bool, len(added))
	for _, a := range added {
		if _, dup := t.addedByContent[a.Content]; dup {
			return fmt.Errorf("%w: added token %q listed twice", ErrInvalid, a.Content)
		}
		if seenID[a.ID] {
			return fmt.Errorf("%w: added token id %d listed twice", ErrInvalid, a.ID)
		}
		seenID[a.ID] = true
		n, ok := t.alpha.appendDecoded(nil, a.Content)
		size := uint32(len(n))
		if !ok {
			size = uint32(len(a.Content))
		}
		t.setKnown(a.ID)
		t.tokSpans[2*a.ID], t.tokSpans[2*a.ID+1] = off, off+size
		off += size
		t.addedByContent[a.Content] = a.ID
		normalized := !a.Special // the crate's default
		if a.Normalized != nil {
			normalized = *a.Normalized
		}
		t.added = append(t.added, addedToken{content: a.Content, id: a.ID, special: a.Special, normalized: normalized})
		if a.Special {
			t.setSpecial(a.ID)
		}
	}
	t.buildAddedMatchers()
	return nil
}

// buildMerges reads model.merges ("a b" strings or ["a", "b"] pairs) into the pair table.
func (t *Tokenizer) buildMerges(raw string) error {
	// Each merge is one string ("a b") or two (["a", "b"]): the count of quotes (an upper bound,
	// escaped ones included) sizes the table without a parse.
	quotes := strings.Count(raw, `"`)
	if strings.HasPrefix(strings.TrimLeft(raw[1:], " \t\r\n"), "[") {
		quotes /= 2
	}
	t.merges = newPairTable(quotes / 2)
	var (
		rank    uint32
		scratch []byte
		err     error
	)
	sc := jsonScanner{s: raw}
	sc.mergeEntries(func(a, b string) bool {
		var idA, idB, idAB uint32
		var okA, okB, okAB bool
		// Fast path: both halves in the byte-level alphabet, looked up by raw bytes.
		scratch, okA = t.alpha.appendDecoded(scratch[:0], a)
		split := len(scratch)
		if okA {
			scratch, okB = t.alpha.appendDecoded(scratch, b)
		}
		if okA && okB {
			idA, okA = t.vocab.getBytes(scratch[:split])
			idB, okB = t.vocab.getBytes(scratch[split:])
			idAB, okAB = t.vocab.getBytes(scratch)
		} else {
			idA, okA = t.lookupSpelling(a)
			idB, okB = t.lookupSpelling(b)
			idAB, okAB = t.lookupSpelling(a + b)
		}
		switch {
		case !okA:
			err = fmt.Errorf("%w: merge %d: token %q not in vocab", ErrInvalid, rank+1, a)
		case !okB:
			err = fmt.Errorf("%w: merge %d: token %q not in vocab", ErrInvalid, rank+1, b)
		case !okAB:
			err = fmt.Errorf("%w: merge %d: token %q not in vocab", ErrInvalid, rank+1, a+b)
		}
		if err != nil {
			return false
		}
		// As in the Rust crate, a pair listed twice keeps its last rank.
		t.merges.put(idA, idB, rank, idAB)
		rank++
		return true
	})
	if err != nil {
		return err
	}
	if sc.err != nil {
		return fmt.Errorf("model.merges: %w", sc.err)
	}
	return nil
}

// lookupSpelling finds a vocab token by its tokenizer.json spelling.
func (t *Tokenizer) lookupSpelling(s string) (uint32, bool) {
	if t.spm != nil {
		return t.vocab.get(s) // SentencePiece-style vocabs are indexed by their UTF-8 spelling
	}
	var buf [64]byte
	raw, ok := t.alpha.appendDecoded(buf[:0], s)
	if ok {
		return t.vocab.getBytes(raw)
	}
	id, found := t.others[s]
	return id, found
}

// addedToken is one entry of added_tokens.
type addedToken struct {
	content    string
	id         uint32
	special    bool
	normalized bool // matched in the normalized text, after the others
}

// addedMatcher finds added tokens in raw text, leftmost-longest, like the Rust crate's
// Aho-Corasick automaton with MatchKind::LeftmostLongest: at the first position where a token
// starts, the longest token there. The tokens are a byte trie, so a position costs the bytes its
// longest candidate shares with the text, not a comparison with every token of its first byte:
// Tekken (Mistral) has ~1,000 added tokens starting with '<', Gemma 3 ~6,000, and tool outputs
// and code hold many '<' and '['.
type addedMatcher struct {
	tokens []addedToken
	// only is the single first byte shared by every token, or -1.
	only int
	// root holds the trie node reached by each first byte (0: no token starts with it); nodes[0]
	// is unused, so 0 means none throughout.
	root  [256]int32
	nodes []matchNode
	edges []matchEdge
}

// matchNode is a trie node: the token whose content ends here (-1: none) and its children,
// edges[edgeStart:edgeStart+edgeCount], sorted by byte.
type matchNode struct {
	tok                  int32
	edgeStart, edgeCount int32
}

type matchEdge struct {
	b     byte
	child int32
}

func newAddedMatcher(tokens []addedToken) *addedMatcher {
	m := &addedMatcher{tokens: tokens, only: -1}
	// Built as a map trie, then laid out flat. Of tokens with the same content the first wins,
	// as it did when candidates were tried in order.
	type tmpNode struct {
		tok      int32
		children map[byte]*tmpNode
	}
	newTmp := func() *tmpNode { return &tmpNode{tok: -1, children: map[byte]*tmpNode{}} }
	var roots [256]*tmpNode
	firsts := 0
	for i, tok := range tokens {
		c := tok.content[0]
		if roots[c] == nil {
			roots[c] = newTmp()
			firsts++
			m.only = int(c)
		}
		n := roots[c]
		for j := 1; j < len(tok.content); j++ {
			next := n.children[tok.content[j]]
			if next == nil {
				next = newTmp()
				n.children[tok.content[j]] = next
			}
			n = next
		}
		if n.tok < 0 {
			n.tok = int32(i)
		}
	}
	if firsts != 1 {
		m.only = -1
	}
	m.nodes = []matchNode{{tok: -1}}
	var add func(t *tmpNode) int32
	add = func(t *tmpNode) int32 {
		id := int32(len(m.nodes))
		m.nodes = append(m.nodes, matchNode{tok: t.tok})
		bs := make([]byte, 0, len(t.children))
		for b := range t.children {
			bs = append(bs, b)
		}
		slices.Sort(bs)
		start := int32(len(m.edges))
		for _, b := range bs {
			m.edges = append(m.edges, matchEdge{b: b})
		}
		m.nodes[id].edgeStart, m.nodes[id].edgeCount = start, int32(len(bs))
		for k, b := range bs {
			child := add(t.children[b])
			m.edges[int(start)+k].child = child
		}
		return id
	}
	for c, t := range roots {
		if t != nil {
			m.root[c] = add(t)
		}
	}
	return m
}

// child returns n's child for byte b, 0 if none.
func (m *addedMatcher) child(n *matchNode, b byte) int32 {
	edges := m.edges[n.edgeStart : n.edgeStart+n.edgeCount]
	if len(edges) <= 8 {
		for _, e := range edges {
			if e.b == b {
				return e.child
			}
		}
		return 0
	}
	k, found := slices.BinarySearchFunc(edges, b, func(e matchEdge, b byte) int { return int(e.b) - int(b) })
	if !found {
		return 0
	}
	return edges[k].child
}

// next returns the first match at or after byte offset from: its start, end and token, or start -1.
func (m *addedMatcher) next(s string, from int) (int, int, uint32) {
	if len(m.tokens) == 0 {
		return -1, -1, 0
	}
	for i := from; i < len(s); i++ {
		if m.only >= 0 {
			j := strings.IndexByte(s[i:], byte(m.only))
			if j < 0 {
				return -1, -1, 0
			}
			i += j
		}
		n := m.root[s[i]]
		best, bestEnd := int32(-1), 0
		for end := i + 1; n != 0; end++ {
			nd := &m.nodes[n]
			if nd.tok >= 0 {
				best, bestEnd = nd.tok, end
			}
			if end >= len(s) {
				break
			}
			n = m.child(nd, s[end])
		}
		if best >= 0 {
			return i, bestEnd, m.tokens[best].id
		}
	}
	return -1, -1, 0
}
