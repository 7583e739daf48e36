package bpe

import (
	"errors"
	"fmt"
	"strings"
)

// SentencePiece-style BPE: the tokenizer.json files that transformers converts from SentencePiece
// models (Llama 2, Mistral v0.x and Mixtral, Gemma). Unlike byte-level BPE their vocab is spelled
// in UTF-8 with "▁" for a space, a word starts as one symbol per character, and a character missing
// from the vocab becomes its bytes' "<0xXX>" tokens (byte_fallback) or the unknown token. The
// pipeline is the Rust crate's for these files:
//
//  1. added tokens are split out of the raw text (shared with the byte-level path);
//  2. each segment between them is normalized: Prepend "▁" (only a non-empty segment), Replace
//     " " → "▁", NFC, in the file's order (normalizers_spm.go);
//  3. pre-tokenized: none (the whole segment is one word), a Split on a literal string, or
//     Metaspace (" " → "▁", "▁" prepended per prepend_scheme, optionally split before each "▁");
//  4. merged by BPE rank from character symbols (this file);
//  5. decoded by the file's decoder chain: Replace, ByteFallback, Fuse, Strip (decoders.go).
//
// loadSentencePiece claims a file when its decoder is anything but ByteLevel; the byte-level
// families all decode with ByteLevel.

// errNotSentencePiece tells Load to continue with the byte-level loader.
var errNotSentencePiece = errors.New("not a SentencePiece-style tokenizer.json")

// sentencePiece holds what the SentencePiece-style pipeline adds to a Tokenizer.
type sentencePiece struct {
	normalizers []spmNormalizer
	split       *literalSplit // nil: a normalized segment is one word
	meta        *metaspace    // the Metaspace pre-tokenizer, instead of split
	decoder     decoderChain

	byteFallback bool
	fuseUnk      bool
	hasUnk       bool
	unkID        uint32
	// byteToken is the id of the "<0xXX>" token of each byte, byteTokenOK whether there is one.
	byteToken   [256]uint32
	byteTokenOK [256]bool
	// asciiID is the id of each one-character ASCII token, -1 when the vocab lacks it: the symbols
	// of most words without a hash lookup.
	asciiID [128]int32
}

// spmFile holds the parsed parts of a SentencePiece-style tokenizer.json.
type spmFile struct {
	added       []addedTokenJSON
	normalizer  string // raw JSON
	preTok      string
	postProc    string
	decoder     string
	model       modelJSON
	vocab       string
	merges      string
	sawModel    bool
	sawDecoder  bool
	sawPreToken bool
}

// loadSentencePiece loads doc when it is a SentencePiece-style tokenizer.json, and returns an error
// wrapping errNotSentencePiece when it is not (or is not JSON at all: the byte-level loader then
// reports what is wrong).
func loadSentencePiece(doc string) (*Tokenizer, error) {
	var (
		f   spmFile
		err error // the first refusal; scanning goes on until the decoder says whose file this is
	)
	sc := jsonScanner{s: doc}
	sc.members(func(k string) bool {
		var e error
		if k == "model" {
			f.sawModel = true
			if err != nil {
				sc.skipComposite()
				return sc.err == nil
			}
			e = f.scanModel(&sc)
		} else {
			raw := sc.rawValue()
			if sc.err != nil {
				return false
			}
			switch k {
			case "decoder":
				f.sawDecoder = true
				f.decoder = raw
				if !isSentencePieceDecoder(raw) {
					err = errNotSentencePiece
					return false
				}
			case "version":
			case "truncation", "padding":
				if raw != "null" {
					e = unsupported("%s (must be null)", k)
				}
			case "added_tokens":
				if err == nil {
					e = f.parseAddedTokens(raw)
				}
			case "normalizer":
				f.normalizer = raw
			case "pre_tokenizer":
				f.sawPreToken = true
				f.preTok = raw
			case "post_processor":
				f.postProc = raw
			default:
				e = unsupported("top-level field %q", k)
			}
		}
		if err == nil {
			err = e
		}
		// Once refused, stop as soon as the decoder has shown this is a SentencePiece-style file.
		return err == nil || !f.sawDecoder
	})
	switch {
	case errors.Is(err, errNotSentencePiece), sc.err != nil, !f.sawDecoder:
		return nil, errNotSentencePiece
	case err != nil:
		return nil, err
	case sc.peek() != 0:
		return nil, fmt.Errorf("%w: data after the top-level object", ErrInvalid)
	case !f.sawModel:
		return nil, fmt.Errorf("%w: missing %q", ErrInvalid, "model")
	case !f.sawPreToken:
		return nil, fmt.Errorf("%w: missing %q", ErrInvalid, "pre_tokenizer")
	}
	return f.build()
}

// isSentencePieceDecoder reports whether a decoder belongs to this pipeline: present and not
// ByteLevel.
func isSentencePieceDecoder(raw string) bool {
	if raw == "null" {
		return false
	}
	var probe struct {
		Type string `json:"type"`
	}
	dec := jsonScanner{s: raw}
	dec.members(func(k string) bool {
		if k == "type" {
			probe.Type, _ = dec.str()
			return true
		}
		dec.rawValue()
		return true
	})
	return dec.err == nil && probe.Type != "" && probe.Type != "ByteLevel"
}

func (f *spmFile) parseAddedTokens(raw string) error {
	if raw == "null" {
		return nil
	}
	if err := decodeStrict(raw, &f.added, "added_tokens"); err != nil {
		return err
	}
	for _, a := range f.added {
		normalized := !a.Special
		if a.Normalized != nil {
			normalized = *a.Normalized
		}
		switch {
		case a.Content == "":
			return fmt.Errorf("%w: added token %d has empty content", ErrInvalid, a.ID)
		case a.SingleWord:
			return unsupported("added token %q (id %d): single_word=true", a.Content, a.ID)
		case a.LStrip:
			return unsupported("added token %q (id %d): lstrip=true", a.Content, a.ID)
		case a.RStrip:
			return unsupported("added token %q (id %d): rstrip=true", a.Content, a.ID)
		case normalized:
			return unsupported("added token %q (id %d): normalized=true", a.Content, a.ID)
		}
	}
	return nil
}

// scanModel reads "model" (scanModel in load.go).
func (f *spmFile) scanModel(sc *jsonScanner) error {
	var err error
	f.model, f.vocab, f.merges, err = scanModel(sc)
	return err
}

// build turns the parsed parts into a Tokenizer.
func (f *spmFile) build() (*Tokenizer, error) {
	if err := f.model.check(f.vocab, f.merges); err != nil {
		return nil, err
	}
	p := &sentencePiece{byteFallback: f.model.ByteFallback, fuseUnk: f.model.FuseUnk}
	var err error
	// The decoder first: it is what sent the file here, so its refusal names the real difference.
	if p.decoder, err = parseDecoderChain(f.decoder); err != nil {
		return nil, err
	}
	if p.normalizers, err = parseSPMNormalizer(f.normalizer); err != nil {
		return nil, err
	}
	if p.split, p.meta, err = parseSPMPreTokenizer(f.preTok); err != nil {
		return nil, err
	}
	if err = checkSPMPostProcessor(f.postProc); err != nil {
		return nil, err
	}
	// The TemplateProcessing BOS of EncodeWithSpecialTokens (`stitch tokenize --add-special-tokens`);
	// Encode, the chat path, never adds it.
	var post loader
	if f.postProc != "" {
		if err = post.parsePostProcessor(f.postProc); err != nil {
			return nil, err
		}
	}
	t := &Tokenizer{spm: p, ignoreMerges: f.model.IgnoreMerges, post: post.post}
	if err := t.buildSPMVocab(f); err != nil {
		return nil, err
	}
	if err := p.resolveSpecialIDs(t, f.model.UnkToken); err != nil {
		return nil, err
	}
	if err := t.buildSPMMerges(f.merges); err != nil {
		return nil, err
	}
	t.cache = newWordCache(defaultCacheWords)
	return t, nil
}

// buildSPMVocab copies the vocab's and the added tokens' spellings into one arena and indexes them.
func (t *Tokenizer) buildSPMVocab(f *spmFile) error {
	arena := make([]byte, 0, len(f.vocab)+addedBytes(f.added))
	entries := make([]vocabEntry, 0, len(f.vocab)/12)
	var maxID uint32
	sc := jsonScanner{s: f.vocab}
	sc.objectEntries(func(tok string, id uint32) bool {
		start := len(arena)
		arena = append(arena, tok...)
		maxID = max(maxID, id)
		entries = append(entries, vocabEntry{start: uint32(start), end: uint32(len(arena)), id: id})
		return true
	})
	if sc.err != nil {
		return fmt.Errorf("model.vocab: %w", sc.err)
	}
	if len(entries) == 0 {
		return fmt.Errorf("%w: empty vocab", ErrInvalid)
	}
	addedStart := len(arena)
	for _, a := range f.added {
		maxID = max(maxID, a.ID)
		arena = append(arena, a.Content...)
	}
	if n := len(entries) + len(f.added); int64(maxID) > 2*int64(n)+1024 {
		return unsupported("sparse token ids: largest id %d for %d tokens", maxID, n)
	}
	t.arena = string(arena)
	t.vocabSize = int(maxID) + 1
	t.tokSpans = make([]uint32, 2*t.vocabSize)
	t.known = make([]uint64, (t.vocabSize+63)/64)
	t.vocab = newVocabTable(len(entries), t.arena, t.tokSpans)
	for _, e := range entries {
		if t.isKnown(e.id) {
			return fmt.Errorf("%w: vocab id %d is used twice", ErrInvalid, e.id)
		}
		t.setKnown(e.id)
		t.tokSpans[2*e.id], t.tokSpans[2*e.id+1] = e.start, e.end
		if !t.vocab.put(e.id) {
			return fmt.Errorf("%w: vocab token %q listed twice", ErrInvalid, t.arena[e.start:e.end])
		}
	}
	if err := t.checkAddedIDs(f.added, len(entries)); err != nil {
		return err
	}
	// Added tokens decode to their content (the Rust crate asks the added vocabulary first).
	t.addedByContent = make(map[string]uint32, len(f.added))
	seenID := make(map[uint32]bool, len(f.added))
	off := uint32(addedStart)
	for _, a := range f.added {
		if _, dup := t.addedByContent[a.Content]; dup {
			return fmt.Errorf("%w: added token %q listed twice", ErrInvalid, a.Content)
		}
		if seenID[a.ID] {
			return fmt.Errorf("%w: added token id %d listed twice", ErrInvalid, a.ID)
		}
		seenID[a.ID] = true
		size := uint32(len(a.Content))
		t.setKnown(a.ID)
		t.tokSpans[2*a.ID], t.tokSpans[2*a.ID+1] = off, off+size
		off += size
		t.addedByContent[a.Content] = a.ID
		t.added = append(t.added, addedToken{content: a.Content, id: a.ID, special: a.Special})
		if a.Special {
			t.setSpecial(a.ID)
		}
	}
	t.matcher = newAddedMatcher(t.added)
	return nil
}

// resolveSpecialIDs finds the ids of the byte-fallback tokens, the one-character ASCII tokens and
// the unknown token.
func (p *sentencePiece) resolveSpecialIDs(t *Tokenizer, unk *string) error {
	const hex = "0123456789ABCDEF"
	allBytes := true
	for b := range 256 {
		// The crate spells them with format!("<{b:#04X}>"): "<0x0A>".
		name := string([]byte{'<', '0', 'x', hex[b>>4], hex[b&15], '>'})
		p.byteToken[b], p.byteTokenOK[b] = t.vocab.get(name)
		allBytes = allBytes && p.byteTokenOK[b]
	}
	for c := range 128 {
		p.asciiID[c] = -1
		if id, ok := t.vocab.get(string(rune(c))); ok {
			p.asciiID[c] = int32(id)
		}
	}
	if unk == nil {
		return nil
	}
	id, ok := t.vocab.get(*unk)
	switch {
	case ok:
		p.hasUnk, p.unkID = true, id
	case p.byteFallback && allBytes:
		// Every character is known or spelled in bytes, so the unknown token is never looked up.
	default:
		// The crate fails to encode any text that needs it (UnkTokenOutOfVocabulary).
		return unsupported("model unk_token %q is not in the vocab", *unk)
	}
	return nil
}

// buildSPMMerges reads model.merges into the pair table; every token is looked up by its UTF-8
// spelling.
func (t *Tokenizer) buildSPMMerges(raw string) error {
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
		idA, okA := t.vocab.get(a)
		idB, okB := t.vocab.get(b)
		scratch = append(append(scratch[:0], a...), b...)
		idAB, okAB := t.vocab.getBytes(scratch)
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
		t.merges.put(idA, idB, rank, idAB) // a pair listed twice keeps its last rank, as in the crate
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

// appendSPMSegment encodes a segment that contains no added token; atStart reports whether it
// begins at offset 0 of the input (only Metaspace's prepend_scheme "first" depends on it).
func (t *Tokenizer) appendSPMSegment(dst []uint32, sc *encodeScratch, seg string, atStart bool) []uint32 {
	p := t.spm
	seg = p.normalize(seg)
	split := p.split
	if p.meta != nil {
		seg, split = p.meta.apply(seg, atStart), p.meta.split
	}
	if split == nil {
		return t.appendSPMWord(dst, &sc.w, seg)
	}
	sc.spans = split.appendSpans(sc.spans[:0], seg)
	for _, sp := range sc.spans {
		dst = t.appendSPMWord(dst, &sc.w, seg[sp.start:sp.end])
	}
	return dst
}

// appendSPMWord appends the BPE ids of one pre-token (UTF-8) to dst, as the crate's
// BPE::tokenize_with_cache.
func (t *Tokenizer) appendSPMWord(dst []uint32, w *merger, word string) []uint32 {
	if word == "" {
		return dst
	}
	if t.ignoreMerges {
		if id, ok := t.vocab.get(word); ok {
			return append(dst, id)
		}
	}
	cacheable := len(word) <= maxCachedWord
	if cacheable {
		if ids, ok := t.cache.get(word); ok {
			return append(dst, ids...)
		}
	}
	start := len(dst)
	w.ids = t.spm.appendSymbols(t, w.ids[:0], word)
	if len(w.ids) <= smallWord {
		dst = w.mergeSymbolsSmall(t, dst)
	} else {
		dst = w.mergeSymbolsHeap(t, dst)
	}
	if cacheable {
		t.cache.put(word, dst[start:])
	}
	return dst
}

// appendSymbols appends the initial symbols of word, as the crate's BPE::merge_word: one per
// character in the vocab; otherwise the character's byte tokens (byte_fallback, when the vocab has
// all of them), else the unknown token (consecutive ones fused into one with fuse_unk), else
// nothing. As in the crate, byte tokens are added before a pending unknown token is.
func (p *sentencePiece) appendSymbols(t *Tokenizer, ids []uint32, word string) []uint32 {
	unkPending := false
	for i := 0; i < len(word); {
		n := charLen(word, i)
		var (
			id uint32
			ok bool
		)
		if c := word[i]; c < 0x80 {
			if v := p.asciiID[c]; v >= 0 {
				id, ok = uint32(v), true
			}
		} else {
			id, ok = t.vocab.get(word[i : i+n])
		}
		switch {
		case ok:
			if unkPending {
				ids = append(ids, p.unkID)
				unkPending = false
			}
			ids = append(ids, id)
		case p.byteFallback && p.hasByteTokens(word[i:i+n]):
			for j := i; j < i+n; j++ {
				ids = append(ids, p.byteToken[word[j]])
			}
		case p.hasUnk:
			if unkPending && !p.fuseUnk {
				ids = append(ids, p.unkID)
			}
			unkPending = true
		}
		i += n
	}
	if unkPending {
		ids = append(ids, p.unkID)
	}
	return ids
}

func (p *sentencePiece) hasByteTokens(s string) bool {
	for i := 0; i < len(s); i++ {
		if !p.byteTokenOK[s[i]] {
			return false
		}
	}
	return true
}

// charLen returns the byte length of the UTF-8 character at s[i]; an ill-formed byte (which the
// crate never sees: its input is a Rust string) counts as a character of its own.
func charLen(s string, i int) int {
	c := s[i]
	var n int
	switch {
	case c < 0xC2:
		return 1
	case c < 0xE0:
		n = 2
	case c < 0xF0:
		n = 3
	case c < 0xF5:
		n = 4
	default:
		return 1
	}
	if i+n > len(s) {
		return 1
	}
	for j := i + 1; j < i+n; j++ {
		if s[j]&0xC0 != 0x80 {
			return 1
		}
	}
	return n
}

// mergeSymbolsSmall merges w.ids like the crate's Word::merge_all: always the pair of lowest rank,
// the leftmost among equals, rescanning after each merge (fastest for short words).
func (w *merger) mergeSymbolsSmall(t *Tokenizer, dst []uint32) []uint32 {
	ids := w.ids
	ranks, merged := w.ranks[:0], w.merged[:0]
	for i := 0; i+1 < len(ids); i++ {
		r, m := t.pairRank(ids[i], ids[i+1])
		ranks = append(ranks, r)
		merged = append(merged, m)
	}
	for {
		best, bestRank := -1, uint32(noRank)
		for i, r := range ranks {
			if r < bestRank {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		ids[best] = merged[best]
		ids = append(ids[:best+1], ids[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		merged = append(merged[:best], merged[best+1:]...)
		if best > 0 {
			ranks[best-1], merged[best-1] = t.pairRank(ids[best-1], ids[best])
		}
		if best < len(ranks) {
			ranks[best], merged[best] = t.pairRank(ids[best], ids[best+1])
		}
	}
	w.ids, w.ranks, w.merged = ids, ranks, merged
	return append(dst, ids...)
}

// mergeSymbolsHeap gives the same result as mergeSymbolsSmall in O(n log n) with the crate's
// algorithm: a queue of candidate merges by (rank, position) over a linked list of symbols; a
// candidate is stale, and skipped, when the pair now at its position is not the one it was queued
// for. The queue holds rank<<32 | position.
func (w *merger) mergeSymbolsHeap(t *Tokenizer, dst []uint32) []uint32 {
	ids := w.ids
	n := len(ids)
	prev, next := grow(w.prev, n), grow(w.next, n)
	for i := range n {
		prev[i], next[i] = int32(i-1), int32(i+1)
	}
	next[n-1] = -1
	h := w.heap[:0]
	for i := 0; i+1 < n; i++ {
		if r, _, ok := t.merges.get(ids[i], ids[i+1]); ok {
			h = heapPush(h, uint64(r)<<32|uint64(i))
		}
	}
	const removed = noRank
	for len(h) > 0 {
		var top uint64
		top, h = heapPop(h)
		p := int32(uint32(top))
		if ids[p] == removed || next[p] < 0 {
			continue
		}
		q := next[p]
		r, merged, ok := t.merges.get(ids[p], ids[q])
		if !ok || r != uint32(top>>32) {
			// Stale: the pair at p changed since this candidate was queued. A rank names one pair;
			// the crate tests the merged token instead, which accepts the same candidates: the
			// pair at a position only ever grows, and a longer spelling is another token.
			continue
		}
		ids[p] = merged
		ids[q] = removed
		next[p] = next[q]
		if next[p] >= 0 {
			prev[next[p]] = p
		}
		if l := prev[p]; l >= 0 {
			if r, _, ok := t.merges.get(ids[l], ids[p]); ok {
				h = heapPush(h, uint64(r)<<32|uint64(l))
			}
		}
		if nx := next[p]; nx >= 0 {
			if r, _, ok := t.merges.get(ids[p], ids[nx]); ok {
				h = heapPush(h, uint64(r)<<32|uint64(p))
			}
		}
	}
	for i := int32(0); i >= 0; i = next[i] {
		dst = append(dst, ids[i])
	}
	w.ids, w.prev, w.next, w.heap = ids, prev, next, h
	return dst
}
