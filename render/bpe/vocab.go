package bpe

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
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
	}
	// Pass 1: copy every vocab token's bytes into one arena. Raw bytes are never longer than the
	// JSON that spells them, so the arena never grows and its final size is known up front.
	arena := make([]byte, 0, len(l.vocab.Raw)+addedBytes(l.added))
	entries := make([]vocabEntry, 0, len(l.vocab.Raw)/12)
	var (
		maxID    uint32
		firstErr error
	)
	l.vocab.ForEach(func(key, value gjson.Result) bool {
		if value.Type != gjson.Number || value.Num < 0 || value.Num > math.MaxInt32 || value.Num != math.Trunc(value.Num) {
			firstErr = fmt.Errorf("%w: vocab entry %s has id %s", ErrInvalid, key.Raw, value.Raw)
			return false
		}
		tok := key.String()
		start := len(arena)
		var ok bool
		arena, ok = t.alpha.appendDecoded(arena, tok)
		if !ok {
			arena = append(arena, tok...)
		}
		id := uint32(value.Num)
		maxID = max(maxID, id)
		entries = append(entries, vocabEntry{start: uint32(start), end: uint32(len(arena)), id: id, alphabet: ok})
		return true
	})
	if firstErr != nil {
		return nil, firstErr
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
	if maxID >= math.MaxInt32 {
		return nil, fmt.Errorf("%w: token id %d too large", ErrInvalid, maxID)
	}
	t.arena = string(arena)
	t.vocabSize = int(maxID) + 1
	t.tokStart = make([]uint32, t.vocabSize)
	t.tokEnd = make([]uint32, t.vocabSize)
	t.known = make([]uint64, (t.vocabSize+63)/64)

	// Pass 2: index the vocabulary by raw bytes (tokens spelled in the alphabet, which are all a
	// byte-level pre-token can ever be) or by their JSON spelling (the rest).
	t.vocab = make(map[string]uint32, len(entries))
	for _, e := range entries {
		if t.isKnown(e.id) {
			return nil, fmt.Errorf("%w: vocab id %d is used twice", ErrInvalid, e.id)
		}
		t.setKnown(e.id)
		t.tokStart[e.id], t.tokEnd[e.id] = e.start, e.end
		s := t.arena[e.start:e.end]
		if e.alphabet {
			t.vocab[s] = e.id
		} else {
			if t.others == nil {
				t.others = map[string]uint32{}
			}
			t.others[s] = e.id
		}
	}
	for b := range 256 {
		id, ok := t.vocab[string([]byte{byte(b)})]
		if !ok {
			return nil, unsupported("vocab without the byte-level token %q for byte 0x%02x", string(t.alpha.char[b]), b)
		}
		t.byteID[b] = id
	}
	if err := t.buildAdded(l.added, addedStart); err != nil {
		return nil, err
	}
	if err := t.buildMerges(l.merges); err != nil {
		return nil, err
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

// buildAdded indexes the added tokens; their decode spellings follow addedStart in the arena.
func (t *Tokenizer) buildAdded(added []addedTokenJSON, addedStart int) error {
	t.addedByContent = make(map[string]uint32, len(added))
	t.addedByID = make(map[uint32]int, len(added))
	off := uint32(addedStart)
	for i, a := range added {
		if _, dup := t.addedByContent[a.Content]; dup {
			return fmt.Errorf("%w: added token %q listed twice", ErrInvalid, a.Content)
		}
		if _, dup := t.addedByID[a.ID]; dup {
			return fmt.Errorf("%w: added token id %d listed twice", ErrInvalid, a.ID)
		}
		n, ok := t.alpha.appendDecoded(nil, a.Content)
		size := uint32(len(n))
		if !ok {
			size = uint32(len(a.Content))
		}
		t.setKnown(a.ID)
		t.tokStart[a.ID], t.tokEnd[a.ID] = off, off+size
		off += size
		t.addedByContent[a.Content] = a.ID
		t.addedByID[a.ID] = i
		t.added = append(t.added, addedToken{content: a.Content, id: a.ID, special: a.Special})
		if a.Special {
			t.setSpecial(a.ID)
		}
	}
	t.matcher = newAddedMatcher(t.added)
	return nil
}

// buildMerges reads model.merges ("a b" strings or ["a", "b"] pairs) into the pair table.
func (t *Tokenizer) buildMerges(merges gjson.Result) error {
	n := 0
	merges.ForEach(func(_, _ gjson.Result) bool { n++; return true })
	t.merges = newPairTable(n)
	var (
		rank     uint32
		firstErr error
		scratch  []byte
	)
	merges.ForEach(func(_, m gjson.Result) bool {
		var a, b string
		switch {
		case m.Type == gjson.String:
			var ok bool
			a, b, ok = strings.Cut(m.String(), " ")
			if !ok || strings.Contains(b, " ") {
				firstErr = fmt.Errorf("%w: merge %d %s is not two tokens", ErrInvalid, rank+1, m.Raw)
				return false
			}
		case m.IsArray():
			parts := m.Array()
			if len(parts) != 2 || parts[0].Type != gjson.String || parts[1].Type != gjson.String {
				firstErr = fmt.Errorf("%w: merge %d %s is not two tokens", ErrInvalid, rank+1, m.Raw)
				return false
			}
			a, b = parts[0].String(), parts[1].String()
		default:
			firstErr = fmt.Errorf("%w: merge %d %s is not a string or pair", ErrInvalid, rank+1, m.Raw)
			return false
		}
		var idA, idB, idAB uint32
		var okA, okB, okAB bool
		idA, okA, scratch = t.lookupSpelling(scratch, a)
		idB, okB, scratch = t.lookupSpelling(scratch, b)
		idAB, okAB, scratch = t.lookupSpelling2(scratch, a, b)
		switch {
		case !okA:
			firstErr = fmt.Errorf("%w: merge %d: token %q not in vocab", ErrInvalid, rank+1, a)
		case !okB:
			firstErr = fmt.Errorf("%w: merge %d: token %q not in vocab", ErrInvalid, rank+1, b)
		case !okAB:
			firstErr = fmt.Errorf("%w: merge %d: token %q not in vocab", ErrInvalid, rank+1, a+b)
		}
		if firstErr != nil {
			return false
		}
		// As in the Rust crate, a pair listed twice keeps its last rank.
		t.merges.put(idA, idB, rank, idAB)
		rank++
		return true
	})
	return firstErr
}

// lookupSpelling finds a vocab token by its tokenizer.json spelling. scratch is reused.
func (t *Tokenizer) lookupSpelling(scratch []byte, s string) (uint32, bool, []byte) {
	raw, ok := t.alpha.appendDecoded(scratch[:0], s)
	if ok {
		id, found := t.vocab[string(raw)]
		return id, found, raw
	}
	id, found := t.others[s]
	return id, found, raw
}

// lookupSpelling2 is lookupSpelling of a+b.
func (t *Tokenizer) lookupSpelling2(scratch []byte, a, b string) (uint32, bool, []byte) {
	raw, okA := t.alpha.appendDecoded(scratch[:0], a)
	if okA {
		var okB bool
		raw, okB = t.alpha.appendDecoded(raw, b)
		if okB {
			id, found := t.vocab[string(raw)]
			return id, found, raw
		}
	}
	id, found := t.others[a+b]
	return id, found, raw
}

// addedToken is one entry of added_tokens.
type addedToken struct {
	content string
	id      uint32
	special bool
}

// addedMatcher finds added tokens in raw text, leftmost-longest, like the Rust crate's
// Aho-Corasick automaton with MatchKind::LeftmostLongest.
type addedMatcher struct {
	// byFirst lists, per first byte, the indexes of the tokens starting with it, longest first.
	byFirst [256][]int
	tokens  []addedToken
	// only is the single first byte shared by every token, or -1.
	only int
}

func newAddedMatcher(tokens []addedToken) *addedMatcher {
	m := &addedMatcher{tokens: tokens, only: -1}
	firsts := 0
	for i, tok := range tokens {
		c := tok.content[0]
		if len(m.byFirst[c]) == 0 {
			firsts++
			m.only = int(c)
		}
		m.byFirst[c] = append(m.byFirst[c], i)
	}
	if firsts != 1 {
		m.only = -1
	}
	for c := range m.byFirst {
		slices.SortStableFunc(m.byFirst[c], func(a, b int) int {
			return len(tokens[b].content) - len(tokens[a].content)
		})
	}
	return m
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
		for _, k := range m.byFirst[s[i]] {
			c := m.tokens[k].content
			if strings.HasPrefix(s[i:], c) {
				return i, i + len(c), m.tokens[k].id
			}
		}
	}
	return -1, -1, 0
}
