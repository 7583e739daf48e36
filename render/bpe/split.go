package bpe

import (
	"fmt"
	"strings"
)

// Split pre-tokenizers as the Rust crate composes them: a Split finds the pattern's matches in a
// piece (find_iter semantics, regex_vm.go), marks them and the gaps between them, and its behavior
// turns those into pieces; a Sequence applies each pre-tokenizer to every piece the previous one
// produced. Empty pieces are dropped, as the crate's PreTokenizedString does.
//
// A pattern with a hand-written scanner (pretok.go) uses it for the Isolated, non-inverted case:
// the scanners were checked against the oracle and are several times faster. Any other pattern runs
// on the general engine, which is exact but slower; Load logs which.

// splitBehavior is a Split's "behavior".
type splitBehavior uint8

const (
	behaviorIsolated splitBehavior = iota
	behaviorRemoved
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

func parseBehavior(s string) (splitBehavior, bool) {
	switch s {
	case "Isolated":
		return behaviorIsolated, true
	case "Removed":
		return behaviorRemoved, true
	case "MergedWithPrevious":
		return behaviorMergedWithPrevious, true
	case "MergedWithNext":
		return behaviorMergedWithNext, true
	case "Contiguous":
		return behaviorContiguous, true
	}
	return 0, false
}

// splitStep builds the splitter of one Split pre-tokenizer, and a note when it runs on the general
// engine.
func splitStep(c componentJSON) (splitFunc, string, error) {
	behavior, ok := parseBehavior(c.Behavior)
	if !ok {
		return nil, "", unsupported("pre_tokenizer Split behavior %q", c.Behavior)
	}
	if c.Pattern == nil || (c.Pattern.Regex == nil) == (c.Pattern.String == nil) {
		return nil, "", fmt.Errorf("%w: pre_tokenizer Split needs exactly one of pattern.Regex, pattern.String", ErrInvalid)
	}
	if c.Pattern.String != nil {
		lit := *c.Pattern.String
		if lit == "" {
			return nil, "", unsupported("pre_tokenizer Split with an empty String pattern")
		}
		return matchSplitter(func(dst []span, s string) []span { return findLiteral(dst, s, lit) }, behavior, c.Invert), "", nil
	}
	pattern := *c.Pattern.Regex
	if behavior == behaviorIsolated && !c.Invert {
		if split, ok := splitterFor(pattern); ok {
			return split, "", nil
		}
	}
	split, err := regexSplitter(pattern, behavior, c.Invert)
	if err != nil {
		return nil, "", unsupported("pre_tokenizer Split regex %q: %v", pattern, err)
	}
	note := fmt.Sprintf("Split pattern %q has no hand-written scanner: it runs on the general regex engine (exact, slower)", pattern)
	return split, note, nil
}

// regexSplitter is a Split on the general engine.
func regexSplitter(pattern string, behavior splitBehavior, invert bool) (splitFunc, error) {
	re, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	return matchSplitter(re.findAll, behavior, invert), nil
}

// findLiteral appends the non-overlapping occurrences of lit in s (the crate's String pattern; an
// empty one matches nothing).
func findLiteral(dst []span, s, lit string) []span {
	if lit == "" {
		return dst
	}
	for i := 0; ; {
		j := strings.Index(s[i:], lit)
		if j < 0 {
			return dst
		}
		dst = append(dst, span{i + j, i + j + len(lit)})
		i += j + len(lit)
	}
}

// matchSplitter turns a match finder into a splitFunc with the crate's behavior and invert rules.
func matchSplitter(find func(dst []span, s string) []span, behavior splitBehavior, invert bool) splitFunc {
	var pool = make(chan []span, 8) // reusable match buffers; a full or empty channel just allocates
	return func(dst []span, s string) []span {
		if s == "" {
			return dst
		}
		var matches []span
		select {
		case matches = <-pool:
		default:
		}
		matches = find(matches[:0], s)
		dst = applyBehavior(dst, s, matches, behavior, invert)
		select {
		case pool <- matches:
		default:
		}
		return dst
	}
}

// applyBehavior appends the pieces of s given the matches, as the crate's NormalizedString::split:
// the matches and the gaps between them (find_matches), is-match flipped if invert, folded by the
// behavior; empty pieces are dropped at the end.
func applyBehavior(dst []span, s string, matches []span, behavior splitBehavior, invert bool) []span {
	base := len(dst)
	prevMatch := false
	add := func(p span, isMatch bool) {
		isMatch = isMatch != invert
		n := len(dst) - base
		switch behavior {
		case behaviorIsolated:
			dst = append(dst, p)
		case behaviorRemoved:
			if !isMatch {
				dst = append(dst, p)
			}
		case behaviorMergedWithPrevious:
			if isMatch && !prevMatch && n > 0 {
				dst[len(dst)-1].end = p.end
			} else {
				dst = append(dst, p)
			}
		case behaviorContiguous:
			if isMatch == prevMatch && n > 0 {
				dst[len(dst)-1].end = p.end
			} else {
				dst = append(dst, p)
			}
		case behaviorMergedWithNext:
			// Folded from the right in the crate: a match joins the piece after it unless that one
			// is a match too. Forward: a piece is joined onto a pending match before it.
			dst = append(dst, p)
		}
		prevMatch = isMatch
	}
	prev := 0
	for _, m := range matches {
		if m.start != prev {
			add(span{prev, m.start}, false)
		}
		add(m, true)
		prev = m.end
	}
	if prev != len(s) {
		add(span{prev, len(s)}, false)
	}
	if behavior == behaviorMergedWithNext {
		dst = mergeWithNext(dst, base, s, matches, invert)
	}
	// Drop empty pieces.
	out := dst[:base]
	for _, p := range dst[base:] {
		if p.end > p.start {
			out = append(out, p)
		}
	}
	return out
}

// mergeWithNext redoes dst[base:] (the plain pieces) with the crate's MergedWithNext fold, which
// runs right to left: a match whose right neighbour (already folded) is not a match extends that
// neighbour to its own start.
func mergeWithNext(dst []span, base int, s string, matches []span, invert bool) []span {
	type piece struct {
		span
		match bool
	}
	var pieces []piece
	prev := 0
	for _, m := range matches {
		if m.start != prev {
			pieces = append(pieces, piece{span{prev, m.start}, invert})
		}
		pieces = append(pieces, piece{m, !invert})
		prev = m.end
	}
	if prev != len(s) {
		pieces = append(pieces, piece{span{prev, len(s)}, invert})
	}
	var acc []span // reversed
	prevMatch := false
	for i := len(pieces) - 1; i >= 0; i-- {
		p := pieces[i]
		if p.match && !prevMatch && len(acc) > 0 {
			acc[len(acc)-1].start = p.start
		} else {
			acc = append(acc, p.span)
		}
		prevMatch = p.match
	}
	dst = dst[:base]
	for i := len(acc) - 1; i >= 0; i-- {
		dst = append(dst, acc[i])
	}
	return dst
}

// chainSplits applies steps in sequence: each step splits every piece of the previous one.
func chainSplits(steps []splitFunc) splitFunc {
	if len(steps) == 1 {
		return steps[0]
	}
	return func(dst []span, s string) []span {
		base := len(dst)
		dst = steps[0](dst, s)
		var next, tmp []span
		for _, step := range steps[1:] {
			next = next[:0]
			for _, p := range dst[base:] {
				tmp = step(tmp[:0], s[p.start:p.end])
				for _, q := range tmp {
					next = append(next, span{p.start + q.start, p.start + q.end})
				}
			}
			dst = append(dst[:base], next...)
		}
		return dst
	}
}
