package bpe

// Added tokens with normalized=true (DeepSeek's FIM and placeholder tokens, for example). The Rust
// crate's AddedVocabulary finds added tokens in two passes: the normalized=false ones in the raw
// text first (leftmost-longest), then, in every piece between them after the normalizer ran, the
// normalized=true ones, whose contents were normalized the same way when the vocabulary was built.

// buildAddedMatchers builds the matcher of each pass from t.added.
func (t *Tokenizer) buildAddedMatchers() {
	var raw, norm []addedToken
	for _, a := range t.added {
		if !a.normalized {
			raw = append(raw, a)
			continue
		}
		if t.normalize {
			a.content = normalizeNFC(a.content)
		}
		norm = append(norm, a)
	}
	t.matcher = newAddedMatcher(raw)
	if len(norm) > 0 {
		t.normMatcher = newAddedMatcher(norm)
	}
}

// appendNormalizedSegment encodes a normalized segment free of normalized=false tokens: the
// normalized=true tokens in it become their ids, the text between them is pre-tokenized and merged.
func (t *Tokenizer) appendNormalizedSegment(dst []uint32, sc *encodeScratch, seg string) []uint32 {
	pos := 0
	for pos < len(seg) {
		start, end, id := t.normMatcher.next(seg, pos)
		if start < 0 {
			break
		}
		dst = t.appendPretokens(dst, sc, seg[pos:start])
		dst = append(dst, id)
		pos = end
	}
	return t.appendPretokens(dst, sc, seg[pos:])
}

// addedSpansTwoPass is AddedTokenSpans for an identity normalizer: both passes' matches, in order,
// in the coordinates of text.
func (t *Tokenizer) addedSpansTwoPass(text string) []Span {
	var out []Span
	gap := func(from, to int) {
		for pos := from; pos < to; {
			start, end, id := t.normMatcher.next(text[:to], pos)
			if start < 0 {
				return
			}
			out = append(out, Span{Start: start, End: end, ID: id})
			pos = end
		}
	}
	pos := 0
	for pos < len(text) {
		start, end, id := t.matcher.next(text, pos)
		if start < 0 {
			break
		}
		gap(pos, start)
		out = append(out, Span{Start: start, End: end, ID: id})
		pos = end
	}
	gap(pos, len(text))
	return out
}
