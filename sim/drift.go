package sim

import (
	"math/rand/v2"
	"slices"
	"strings"
	"unicode/utf8"
)

// driftTries bounds the candidate tokens tried before giving up on drifting one answer.
const driftTries = 8

// drift returns ids with one token replaced by a valid but non-canonical tokenization of its text:
// the text is split in two at a character boundary and each half encoded on its own, so decoding
// gives the same text while re-encoding it gives the original ids back. A token made only of line
// breaks ("\n\n") is preferred — split "\n","\n" is what real models emit most. It returns ids
// unchanged (and false) when no token can be split.
func drift(tok Tokenizer, ids []uint32, r *rand.Rand) ([]uint32, bool) {
	type site struct {
		pos  int
		text string
	}
	var newlines, others []site
	for i, id := range ids {
		if tok.IsSpecial(id) {
			continue
		}
		s := tok.Decode(ids[i : i+1])
		if utf8.RuneCountInString(s) < 2 || strings.ContainsRune(s, utf8.RuneError) || isMarkup(tok, id, s) {
			continue
		}
		if strings.Trim(s, "\n") == "" {
			newlines = append(newlines, site{i, s})
		} else {
			others = append(others, site{i, s})
		}
	}
	for try := 0; try < driftTries; try++ {
		var c site
		switch {
		case len(newlines) > 0:
			k := r.IntN(len(newlines))
			c = newlines[k]
			newlines = slices.Delete(newlines, k, k+1)
		case len(others) > 0:
			k := r.IntN(len(others))
			c = others[k]
			others = slices.Delete(others, k, k+1)
		default:
			return ids, false
		}
		// Split after a random character, never at the ends.
		n := utf8.RuneCountInString(c.text)
		cut, at := 1+r.IntN(n-1), 0
		for i := range c.text {
			if at == cut {
				cut = i
				break
			}
			at++
		}
		repl := tok.Encode(c.text[:cut])
		repl = append(repl, tok.Encode(c.text[cut:])...)
		if len(repl) < 2 || tok.Decode(repl) != c.text {
			continue
		}
		out := make([]uint32, 0, len(ids)+len(repl)-1)
		out = append(out, ids[:c.pos]...)
		out = append(out, repl...)
		return append(out, ids[c.pos+1:]...), true
	}
	return ids, false
}

// isMarkup reports whether id is a markup token like <tool_call> or <think>: models emit those as
// single added tokens, never spelled out, so they are not drifted.
func isMarkup(tok Tokenizer, id uint32, text string) bool {
	if !strings.HasPrefix(text, "<") || !strings.HasSuffix(text, ">") {
		return false
	}
	got, ok := tok.TokenID(text)
	return ok && got == id
}
