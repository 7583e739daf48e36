package bpe

// Pre-tokenizers: hand-written scanners for the Split patterns of the supported tokenizer.json files.
// Each reproduces what Oniguruma (inside the Rust tokenizers crate) finds for its pattern: at every
// position the alternatives are tried in order and each quantifier backtracks as Oniguruma's does;
// the comments show which alternative each branch implements. Classes come from unicode_tables.go
// (Unicode 16, as that Oniguruma build classifies). Every code point matches some alternative of each
// pattern, so the pieces are the matches themselves, back to back. Checked against the oracle's spans
// on 100k seeded random strings plus edge cases (pretok_test.go) and against regexp2 by FuzzSplit.

// span is a half-open byte range [start, end) of a string.
type span struct{ start, end int }

// splitFunc appends the byte ranges of the pre-tokens of s to dst, in order, covering s exactly.
type splitFunc func(dst []span, s string) []span

// Split patterns of the supported tokenizer.json files, exactly as they appear there.
const (
	patternQwen  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternO200k = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternLlama3 is Llama 3.x's: patternQwen with \p{N}{1,3}.
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternTekken is Mistral's tekken (Nemo, Small 3.x): patternO200k without contractions and
	// with a single \p{N}.
	patternTekken = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternGPT2Split is the pattern of a ByteLevel pre-tokenizer with use_regex=true.
	patternGPT2Split = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// splitterFor reports the splitter for a tokenizer.json Split pattern, and whether it is supported.
func splitterFor(pattern string) (splitFunc, bool) {
	switch pattern {
	case patternQwen:
		return splitQwen, true
	case patternO200k:
		return splitO200k, true
	case patternLlama3:
		return splitLlama3, true
	case patternTekken:
		return splitTekken, true
	case patternGPT2Split:
		return splitGPT2, true
	}
	return nil, false
}

// splitQwen splits s with patternQwen (Qwen2/Qwen3, cl100k-like).
func splitQwen(dst []span, s string) []span {
	for i := 0; i < len(s); {
		e := qwenNext(s, i, 1)
		dst = append(dst, span{i, e})
		i = e
	}
	return dst
}

// splitLlama3 splits s with patternLlama3.
func splitLlama3(dst []span, s string) []span {
	for i := 0; i < len(s); {
		e := qwenNext(s, i, 3)
		dst = append(dst, span{i, e})
		i = e
	}
	return dst
}

// qwenNext returns the end of the patternQwen match starting at s[i], or of patternLlama3's when
// digits is 3 (\p{N}{1,3} instead of \p{N}).
func qwenNext(s string, i, digits int) int {
	c := s[i]
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c == '\'' {
		if n := contractionLen(s, i); n > 0 {
			return i + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+ (the optional prefix is tried first)
	p, n := propsAt(s, i)
	if p&propPrefix != 0 && i+n < len(s) {
		if q, m := propsAt(s, i+n); q&propL != 0 {
			return runEnd(s, i+n+m, propL)
		}
	}
	if p&propL != 0 {
		return runEnd(s, i+n, propL)
	}
	// \p{N} or \p{N}{1,3}
	if p&propN != 0 {
		if digits == 1 {
			return i + n
		}
		return digitsEnd(s, i+n, digits-1)
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	if p&propOther != 0 {
		return newlinesEnd(s, runEnd(s, i+n, propOther), false)
	}
	if c == ' ' && i+1 < len(s) {
		if q, m := propsAt(s, i+1); q&propOther != 0 {
			return newlinesEnd(s, runEnd(s, i+1+m, propOther), false)
		}
	}
	// \s*[\r\n]+|\s+(?!\S)|\s+ (s[i] is whitespace here)
	return spaceEnd(s, i, true)
}

// splitO200k splits s with patternO200k (gpt-oss, o200k_harmony).
func splitO200k(dst []span, s string) []span {
	for i := 0; i < len(s); {
		e := o200kNext(s, i, true)
		dst = append(dst, span{i, e})
		i = e
	}
	return dst
}

// splitTekken splits s with patternTekken.
func splitTekken(dst []span, s string) []span {
	for i := 0; i < len(s); {
		e := o200kNext(s, i, false)
		dst = append(dst, span{i, e})
		i = e
	}
	return dst
}

// o200kNext returns the end of the patternO200k match starting at s[i], or, with o200k false, of
// patternTekken's (no contraction suffixes, \p{N} instead of \p{N}{1,3}).
func o200kNext(s string, i int, o200k bool) int {
	p, n := propsAt(s, i)
	prefixed := p&propPrefix != 0 && i+n < len(s)
	// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|…)?
	if prefixed {
		if e := o200kLowerWord(s, i+n, o200k); e > 0 {
			return e
		}
	}
	if e := o200kLowerWord(s, i, o200k); e > 0 {
		return e
	}
	// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|…)?
	if prefixed {
		if q, m := propsAt(s, i+n); q&propUpper != 0 {
			return maybeContraction(s, runEnd(s, runEnd(s, i+n+m, propUpper), propLower), o200k)
		}
	}
	if p&propUpper != 0 {
		return maybeContraction(s, runEnd(s, runEnd(s, i+n, propUpper), propLower), o200k)
	}
	// \p{N}{1,3} (o200k) or \p{N} (tekken)
	if p&propN != 0 {
		if !o200k {
			return i + n
		}
		return digitsEnd(s, i+n, 2)
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
	if p&propOther != 0 {
		return newlinesEnd(s, runEnd(s, i+n, propOther), true)
	}
	if s[i] == ' ' && i+1 < len(s) {
		if q, m := propsAt(s, i+1); q&propOther != 0 {
			return newlinesEnd(s, runEnd(s, i+1+m, propOther), true)
		}
	}
	// \s*[\r\n]+|\s+(?!\S)|\s+ (s[i] is whitespace here: letters, numbers and the rest matched above)
	return spaceEnd(s, i, true)
}

// o200kLowerWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|…)? at s[a],
// returning its end, or -1. The greedy "upper" run U* is followed by the longest "lower" run when the
// code point after U* is lower; otherwise U* gives back code points up to the last one that is also
// lower (Lm, Lo, M belong to both classes), which then forms W+ alone.
func o200kLowerWord(s string, a int, contractions bool) int {
	lastLower := -1 // end of the last code point of the upper run that is also lower
	for j := a; j < len(s); {
		q, m := propsAt(s, j)
		if q&propUpper == 0 {
			if q&propLower != 0 {
				return maybeContraction(s, runEnd(s, j+m, propLower), contractions)
			}
			break
		}
		j += m
		if q&propLower != 0 {
			lastLower = j
		}
	}
	if lastLower < 0 {
		return -1
	}
	return maybeContraction(s, lastLower, contractions)
}

// splitGPT2 splits s with patternGPT2Split (ByteLevel use_regex=true).
func splitGPT2(dst []span, s string) []span {
	for i := 0; i < len(s); {
		e := gpt2Next(s, i)
		dst = append(dst, span{i, e})
		i = e
	}
	return dst
}

// gpt2Next returns the end of the patternGPT2Split match starting at s[i].
func gpt2Next(s string, i int) int {
	// 's|'t|'re|'ve|'m|'ll|'d (case-sensitive)
	if s[i] == '\'' && i+1 < len(s) {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return i + 3
			}
		}
	}
	// ` ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+`
	p, n := propsAt(s, i)
	j := i
	if s[i] == ' ' && i+1 < len(s) {
		if q, m := propsAt(s, i+1); q&(propL|propN|propOther) != 0 {
			p, n, j = q, m, i+1
		}
	}
	switch {
	case p&propL != 0:
		return runEnd(s, j+n, propL)
	case p&propN != 0:
		return runEnd(s, j+n, propN)
	case p&propOther != 0:
		return runEnd(s, j+n, propOther)
	}
	// \s+(?!\S)|\s+
	return spaceEnd(s, i, false)
}

// contractionLen returns the byte length of the (?i:'s|'t|'re|'ve|'m|'ll|'d) match at s[i] (an
// apostrophe), or 0. Besides ASCII case, Oniguruma's case folding matches only U+017F (ſ) for s
// (extracted from the oracle: testdata/unicode/casefold.txt).
func contractionLen(s string, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	switch s[i+1] {
	case 's', 'S', 't', 'T', 'm', 'M', 'd', 'D':
		return 2
	case 'r', 'R', 'v', 'V':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return 3
		}
	case 'l', 'L':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return 3
		}
	case 0xC5: // U+017F is C5 BF
		if i+2 < len(s) && s[i+2] == 0xBF {
			return 3
		}
	}
	return 0
}

// withContraction extends a match ending at e by an optional (?i) contraction.
func withContraction(s string, e int) int {
	if e < len(s) && s[e] == '\'' {
		return e + contractionLen(s, e)
	}
	return e
}

// maybeContraction is withContraction when contractions, else e.
func maybeContraction(s string, e int, contractions bool) int {
	if !contractions {
		return e
	}
	return withContraction(s, e)
}

// digitsEnd returns the end of up to more further \p{N} code points starting at s[j].
func digitsEnd(s string, j, more int) int {
	for k := 0; k < more && j < len(s); k++ {
		q, m := propsAt(s, j)
		if q&propN == 0 {
			break
		}
		j += m
	}
	return j
}

// runEnd returns the end of the run of code points with any of bits starting at s[j].
func runEnd(s string, j int, bits uint16) int {
	for j < len(s) {
		if c := s[j]; c < 0x80 {
			if propASCII[c]&bits == 0 {
				return j
			}
			j++
			continue
		}
		q, m := propsAt(s, j)
		if q&bits == 0 {
			return j
		}
		j += m
	}
	return j
}

// newlinesEnd returns the end of the run of '\r' and '\n' (and '/' if slash) starting at s[j].
func newlinesEnd(s string, j int, slash bool) int {
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || (slash && s[j] == '/')) {
		j++
	}
	return j
}

// spaceEnd returns the end of the whitespace match at s[i], which is whitespace:
// \s*[\r\n]+ (if newline) ends after the last '\r' or '\n' of the run; otherwise \s+(?!\S) leaves
// the run's last code point to the next piece unless the run ends the input or is one code point
// long, in which case \s+ takes the run.
func spaceEnd(s string, i int, newline bool) int {
	j, last, nl := i, i, -1
	for j < len(s) {
		q, m := propsAt(s, j)
		if q&propSpace == 0 {
			break
		}
		if s[j] == '\r' || s[j] == '\n' {
			nl = j + 1
		}
		last = j
		j += m
	}
	switch {
	case newline && nl >= 0:
		return nl
	case j == len(s) || last == i:
		return j
	}
	return last
}
