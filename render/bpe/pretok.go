package bpe

// TEMPORARY scaffolding: the pre-tokenizers below run the original patterns through dlclark/regexp2
// so the rest of the tokenizer can be built and tested. They are replaced by hand-written scanners with
// Oniguruma's semantics and Unicode 16 classes (issue 2); the signatures stay.

import (
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// span is a half-open byte range [start, end) of a string.
type span struct{ start, end int }

// splitFunc appends the byte ranges of the pre-tokens of s to dst, in order, covering s exactly.
type splitFunc func(dst []span, s string) []span

// Split patterns of the supported tokenizer.json files, exactly as they appear there.
const (
	patternQwen  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternO200k = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// splitterFor reports the splitter for a tokenizer.json Split pattern, and whether it is supported.
func splitterFor(pattern string) (splitFunc, bool) {
	switch pattern {
	case patternQwen:
		return splitQwen, true
	case patternO200k:
		return splitO200k, true
	}
	return nil, false
}

func splitQwen(dst []span, s string) []span {
	return regexpSplit(regexp2.MustCompile(patternQwen, regexp2.Unicode), dst, s)
}
func splitO200k(dst []span, s string) []span {
	return regexpSplit(regexp2.MustCompile(patternO200k, regexp2.Unicode), dst, s)
}

// regexpSplit implements the "Isolated" split behaviour: matches and the gaps between them are pieces.
func regexpSplit(re *regexp2.Regexp, dst []span, s string) []span {
	runes := []rune(s)
	byteOff := make([]int, len(runes)+1)
	off := 0
	for i, r := range runes {
		byteOff[i] = off
		off += utf8.RuneLen(r)
	}
	byteOff[len(runes)] = off
	prev := 0
	m, _ := re.FindRunesMatch(runes)
	for m != nil {
		start, end := byteOff[m.Index], byteOff[m.Index+m.Length]
		if start > prev {
			dst = append(dst, span{prev, start})
		}
		if end > start {
			dst = append(dst, span{start, end})
		}
		prev = end
		m, _ = re.FindNextMatch(m)
	}
	if prev < len(s) {
		dst = append(dst, span{prev, len(s)})
	}
	return dst
}
