package bpe

import "sync"

// Tokenizer is a byte-level BPE tokenizer loaded from a Hugging Face tokenizer.json. It encodes like
// the Rust tokenizers crate with add_special_tokens=false: added tokens are split out of the raw text
// first (leftmost-longest), every segment between them is normalized, pre-tokenized, mapped to bytes
// and merged by BPE rank. A Tokenizer is immutable after [Load] apart from an internal bounded cache,
// and safe for concurrent use.
type Tokenizer struct {
	alpha        *byteLevelAlphabet
	split        splitFunc // nil: a segment is one pre-token
	normalize    bool      // NFC
	ignoreMerges bool

	// arena holds the decoded bytes of every token; id i spells arena[tokSpans[2i]:tokSpans[2i+1]].
	arena          string
	tokSpans       []uint32
	known, special []uint64 // bitsets by id
	vocabSize      int

	vocab  *vocabTable       // raw bytes of a token spelled in the byte-level alphabet → id
	others map[string]uint32 // tokens with other code points, by their spelling → id
	byteID [256]uint32       // the id of each single byte
	merges *pairTable
	// bytePairs holds rank<<32 | merged id (rank noRank: no merge) for every pair of single-byte
	// tokens, indexed by the two bytes: the first merges of every word, without hashing.
	bytePairs []uint64

	added          []addedToken
	addedByContent map[string]uint32
	matcher        *addedMatcher // added tokens with normalized=false, found in the raw text
	normMatcher    *addedMatcher // normalized=true ones, found in each normalized segment; nil if none

	post  *postProcessor // nil: none (EncodeWithSpecialTokens only)
	notes []string

	cache   *wordCache
	scratch sync.Pool // *encodeScratch

	// spm is set for SentencePiece-style files (Llama 2, Mistral v0.x, Gemma): their normalizers,
	// character-level BPE with byte fallback and decoder chain (spm.go); nil for byte-level BPE.
	spm *sentencePiece
}

// encodeScratch holds the reusable buffers of one Encode call.
type encodeScratch struct {
	spans []span
	w     merger
}

func (t *Tokenizer) getScratch() *encodeScratch {
	if s, ok := t.scratch.Get().(*encodeScratch); ok {
		return s
	}
	return &encodeScratch{}
}

func (t *Tokenizer) isKnown(id uint32) bool {
	return int(id) < t.vocabSize && t.known[id/64]&(1<<(id%64)) != 0
}

func (t *Tokenizer) setKnown(id uint32) { t.known[id/64] |= 1 << (id % 64) }

func (t *Tokenizer) setSpecial(id uint32) {
	if t.special == nil {
		t.special = make([]uint64, len(t.known))
	}
	t.special[id/64] |= 1 << (id % 64)
}

// Encode returns the token ids of text, as the Rust crate's encode(text, add_special_tokens=false).
// Added tokens found in text (for example "<|im_end|>" typed by a user) become their ids.
func (t *Tokenizer) Encode(text string) []uint32 {
	return t.AppendEncode(make([]uint32, 0, len(text)/3+1), text)
}

// AppendEncode appends the token ids of text to dst and returns the extended slice.
func (t *Tokenizer) AppendEncode(dst []uint32, text string) []uint32 {
	return t.appendEncode(dst, text, true)
}

// AppendEncodeTail is AppendEncode for text that continues a longer input at an added-token
// boundary (the Start or End of a span of AddedTokenSpans of the whole input, never offset 0):
// Encode(text[:o]) followed by AppendEncodeTail of text[o:] equals Encode(text). It differs from
// AppendEncode only for a Metaspace pre-tokenizer with prepend_scheme "first", which prepends "▁"
// to the segment at offset 0 of the input alone.
func (t *Tokenizer) AppendEncodeTail(dst []uint32, text string) []uint32 {
	return t.appendEncode(dst, text, false)
}

// AtStartMatters reports whether encoding a text depends on where in the input it starts (see
// AppendEncodeTail).
func (t *Tokenizer) AtStartMatters() bool {
	return t.spm != nil && t.spm.meta != nil && t.spm.meta.prepend == prependFirst
}

func (t *Tokenizer) appendEncode(dst []uint32, text string, atStart bool) []uint32 {
	sc := t.getScratch()
	pos := 0
	for pos < len(text) {
		start, end, id := t.matcher.next(text, pos)
		if start < 0 {
			break
		}
		dst = t.appendSegment(dst, sc, text[pos:start], atStart && pos == 0)
		dst = append(dst, id)
		pos = end
	}
	dst = t.appendSegment(dst, sc, text[pos:], atStart && pos == 0)
	t.scratch.Put(sc)
	return dst
}

// appendSegment encodes text that contains no added token; atStart reports whether it begins at
// offset 0 of the input.
func (t *Tokenizer) appendSegment(dst []uint32, sc *encodeScratch, seg string, atStart bool) []uint32 {
	if seg == "" {
		return dst
	}
	if t.spm != nil {
		return t.appendSPMSegment(dst, sc, seg, atStart)
	}
	if t.normalize {
		seg = normalizeNFC(seg)
	}
	if t.normMatcher != nil {
		return t.appendNormalizedSegment(dst, sc, seg)
	}
	return t.appendPretokens(dst, sc, seg)
}

// appendPretokens encodes normalized text that contains no added token.
func (t *Tokenizer) appendPretokens(dst []uint32, sc *encodeScratch, seg string) []uint32 {
	if t.split == nil {
		return t.appendWord(dst, &sc.w, seg)
	}
	sc.spans = t.split(sc.spans[:0], seg)
	for _, sp := range sc.spans {
		dst = t.appendWord(dst, &sc.w, seg[sp.start:sp.end])
	}
	return dst
}

// Span is the byte range [Start, End) of one added-token match in a text, and the token's id.
type Span struct {
	Start, End int
	ID         uint32
}

// AddedTokenSpans returns every added-token match of text in order: the same matches Encode splits
// on. Tokenization is independent across these boundaries: for an offset o that is the Start or End
// of a span, Encode(text) equals Encode(text[:o]) followed by AppendEncodeTail of text[o:]. Added tokens with
// normalized=true are included when the normalizer is the identity; after NFC their matches are in
// normalized text, so only the others are reported (still boundaries Encode splits on).
func (t *Tokenizer) AddedTokenSpans(text string) []Span {
	if t.normMatcher != nil && !t.normalize {
		return t.addedSpansTwoPass(text)
	}
	var out []Span
	for pos := 0; pos < len(text); {
		start, end, id := t.matcher.next(text, pos)
		if start < 0 {
			break
		}
		out = append(out, Span{Start: start, End: end, ID: id})
		pos = end
	}
	return out
}

// MaxAddedTokenLen returns the byte length of the longest added token: how far past a position
// the added-token matcher reads to decide whether a token starts there.
func (t *Tokenizer) MaxAddedTokenLen() int {
	n := 0
	for _, tok := range t.added {
		n = max(n, len(tok.content))
	}
	return n
}

// Notes returns what Load wants the operator to know about this tokenizer, for the log: for example
// a Split pattern that runs on the general regex engine.
func (t *Tokenizer) Notes() []string { return t.notes }

// TokenID returns the id of an added token's content or of a vocab token's tokenizer.json spelling
// (for example "Ġthe"), and whether there is one. Added tokens take precedence.
func (t *Tokenizer) TokenID(token string) (uint32, bool) {
	if id, ok := t.addedByContent[token]; ok {
		return id, true
	}
	return t.lookupSpelling(token)
}

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id uint32) bool {
	return t.special != nil && int(id) < t.vocabSize && t.special[id/64]&(1<<(id%64)) != 0
}

// VocabSize returns the largest token id plus one (vocab and added tokens).
func (t *Tokenizer) VocabSize() int { return t.vocabSize }
