package bpe

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// linearNext is the matcher as it was before the trie: per first byte, every token starting
// with it, longest first, compared in turn. The trie must find the same matches.
func linearNext(tokens []addedToken, s string, from int) (int, int, uint32) {
	order := make([]int, len(tokens))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(tokens[b].content) - len(tokens[a].content) })
	for i := from; i < len(s); i++ {
		for _, k := range order {
			if c := tokens[k].content; c[0] == s[i] && strings.HasPrefix(s[i:], c) {
				return i, i + len(c), tokens[k].id
			}
		}
	}
	return -1, -1, 0
}

// TestAddedMatcherMatchesLinear: on random token sets (shared prefixes, one token a prefix of
// another, duplicates, a single first byte) and random texts made of their pieces, the trie
// finds every match the linear search finds, at the same offsets with the same token.
func TestAddedMatcherMatchesLinear(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := "<>[]/|_aS0"
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	for round := range 300 {
		var tokens []addedToken
		for i := range 1 + r.IntN(40) {
			c := word(1 + r.IntN(6))
			if round%3 == 0 {
				c = "<" + c // a single first byte
			}
			if i > 0 && r.IntN(5) == 0 {
				c = tokens[r.IntN(len(tokens))].content + word(r.IntN(3)) // a token and its extension, or a duplicate
			}
			tokens = append(tokens, addedToken{content: c, id: uint32(1000 + i)})
		}
		m := newAddedMatcher(tokens)
		for range 20 {
			var b strings.Builder
			for range r.IntN(30) {
				if r.IntN(2) == 0 {
					b.WriteString(tokens[r.IntN(len(tokens))].content)
				} else {
					b.WriteString(word(1 + r.IntN(4)))
				}
			}
			s := b.String()
			for pos := 0; pos <= len(s); {
				ws, we, wid := linearNext(tokens, s, pos)
				gs, ge, gid := m.next(s, pos)
				if gs != ws || ge != we || gid != wid {
					t.Fatalf("round %d, %q from %d: trie (%d,%d,%d), linear (%d,%d,%d); tokens %v", round, s, pos, gs, ge, gid, ws, we, wid, tokens)
				}
				if ws < 0 {
					break
				}
				pos = we
			}
		}
	}
}

// FuzzAddedMatcher checks the trie against the linear search on fuzzed token sets (split at
// NUL) and texts.
func FuzzAddedMatcher(f *testing.F) {
	f.Add("<s>\x00</s>\x00<SPECIAL_1>\x00<SPECIAL_10>\x00[INST]", "a<SPECIAL_10>b[INST]<s</s>")
	f.Add("ab\x00abc\x00b", "xabcabab")
	f.Fuzz(func(t *testing.T, toks, s string) {
		if len(toks) > 512 || len(s) > 2048 {
			return
		}
		var tokens []addedToken
		for i, c := range strings.Split(toks, "\x00") {
			if c != "" {
				tokens = append(tokens, addedToken{content: c, id: uint32(i)})
			}
		}
		m := newAddedMatcher(tokens)
		for pos := 0; pos <= len(s); {
			ws, we, wid := linearNext(tokens, s, pos)
			gs, ge, gid := m.next(s, pos)
			if gs != ws || ge != we || gid != wid {
				t.Fatalf("%q from %d: trie (%d,%d,%d), linear (%d,%d,%d)", s, pos, gs, ge, gid, ws, we, wid)
			}
			if ws < 0 {
				break
			}
			pos = we
		}
	})
}
