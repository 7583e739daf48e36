package bpe

import "unicode/utf8"

// DeepSeek V3 / V3.1 / V4 pre-tokenize with a Sequence of three Isolated Splits (then ByteLevel):
//
//  1. \p{N}{1,3}
//  2. [一-龥぀-ゟ゠-ヿ]+ (U+4E00–U+9FA5, U+3040–U+309F, U+30A0–U+30FF)
//  3. patternDeepSeekMain, on every piece the first two left.
//
// splitDeepSeek fuses them into one scan, which the general engine (about 6x slower on this
// pattern, measured) checks it against (FuzzDeepSeekSplit), as does the oracle on the tokenizer
// goldens. Step 1 cuts every run of \p{N} into chunks of three (the last shorter); a chunk is one
// piece, since no alternative of step 3 matches inside a run of \p{N}. Step 2 then cuts the rest
// into runs of those CJK blocks and runs of anything else; step 3 splits each such run on its own.
const (
	patternDeepSeekDigits = `\p{N}{1,3}`
	patternDeepSeekCJK    = "[一-龥\u3040-ゟ゠-ヿ]+"
	patternDeepSeekMain   = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)

// fusedScanner returns a scanner for a whole Sequence of Isolated Splits, when there is one.
func fusedScanner(patterns []string) (splitFunc, bool) {
	if len(patterns) == 3 && patterns[0] == patternDeepSeekDigits && patterns[1] == patternDeepSeekCJK && patterns[2] == patternDeepSeekMain {
		return splitDeepSeek, true
	}
	return nil, false
}

func isDeepSeekCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FA5) || (r >= 0x3040 && r <= 0x30FF)
}

func splitDeepSeek(dst []span, s string) []span {
	for i := 0; i < len(s); {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		if propsOf(r)&propN != 0 {
			j := digitsEnd(s, i+n, 2)
			dst = append(dst, span{i, j})
			i = j
			continue
		}
		cjk := isDeepSeekCJK(r)
		j := i + n
		for j < len(s) {
			q, m := rune(s[j]), 1
			if q >= utf8.RuneSelf {
				q, m = utf8.DecodeRuneInString(s[j:])
			}
			if propsOf(q)&propN != 0 || isDeepSeekCJK(q) != cjk {
				break
			}
			j += m
		}
		dst = deepSeekMain(dst, s[:j], i)
		i = j
	}
	return dst
}

// deepSeekMain appends the pieces of patternDeepSeekMain over s[a:] (Isolated: the matches and the
// gaps between them; the piece ends where s does).
func deepSeekMain(dst []span, s string, a int) []span {
	gap := -1 // start of the pending gap
	for i := a; i < len(s); {
		e := deepSeekMatch(s, i)
		if e < 0 {
			if gap < 0 {
				gap = i
			}
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
			continue
		}
		if gap >= 0 {
			dst = append(dst, span{gap, i})
			gap = -1
		}
		dst = append(dst, span{i, e})
		i = e
	}
	if gap >= 0 {
		dst = append(dst, span{gap, len(s)})
	}
	return dst
}

// deepSeekBits returns the property bits and extra bits of the code point at s[i], and its length.
func deepSeekBits(s string, i int) (uint16, uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return propASCII[c], xpropASCII[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return propsOf(r), xpropsOf(r), n
}

const deepSeekLM = propL | propM

// deepSeekMatch returns the end of the patternDeepSeekMain match at s[i], or -1.
func deepSeekMatch(s string, i int) int {
	p, x, n := deepSeekBits(s, i)
	c := s[i]
	// [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
	if c < utf8.RuneSelf && x != 0 && i+1 < len(s) && isASCIILetter(rune(s[i+1])) {
		j := i + 2
		for j < len(s) && isASCIILetter(rune(s[j])) {
			j++
		}
		return j
	}
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ (an M first is the same match either way)
	if p&deepSeekLM != 0 {
		return deepSeekRunLM(s, i+n)
	}
	if x == 0 && c != '\r' && c != '\n' && i+n < len(s) {
		if q, _, _ := deepSeekBits(s, i+n); q&deepSeekLM != 0 {
			return deepSeekRunLM(s, i+n)
		}
	}
	// ` ?[\p{P}\p{S}]+[\r\n]*`
	j := i
	if c == ' ' && i+1 < len(s) {
		if _, y, _ := deepSeekBits(s, i+1); y != 0 {
			j = i + 1
		}
	}
	if _, y, m := deepSeekBits(s, j); y != 0 {
		j += m
		for j < len(s) {
			_, y, m := deepSeekBits(s, j)
			if y == 0 {
				break
			}
			j += m
		}
		return newlinesEnd(s, j, false)
	}
	// \s*[\r\n]+|\s+(?!\S)|\s+
	if p&propSpace != 0 {
		return spaceEnd(s, i, true)
	}
	return -1
}

// deepSeekRunLM returns the end of the run of [\p{L}\p{M}] starting at s[j].
func deepSeekRunLM(s string, j int) int {
	for j < len(s) {
		if c := s[j]; c < utf8.RuneSelf {
			if propASCII[c]&deepSeekLM == 0 {
				return j
			}
			j++
			continue
		}
		q, m := propsAt(s, j)
		if q&deepSeekLM == 0 {
			return j
		}
		j += m
	}
	return j
}
