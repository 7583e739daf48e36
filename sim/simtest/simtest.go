// Package simtest holds test helpers for code that runs against the simulator: a tiny stand-in
// tokenizer with Qwen3's added-token ids, for tests that must not load the real tokenizer.
package simtest

import (
	"strings"
	"unicode/utf8"
)

// Qwen3 added tokens known to [ByteTokenizer], with their real ids.
var qwenAdded = []struct {
	text    string
	id      uint32
	special bool
}{
	{"<|endoftext|>", 151643, true},
	{"<|im_start|>", 151644, true},
	{"<|im_end|>", 151645, true},
	{"<tool_call>", 151657, false},
	{"</tool_call>", 151658, false},
	{"<tool_response>", 151665, false},
	{"</tool_response>", 151666, false},
	{"<think>", 151667, false},
	{"</think>", 151668, false},
}

// NewlinePair is ByteTokenizer's id for "\n\n", its only multi-byte vocabulary token, so that a
// non-canonical tokenization ("\n","\n") exists.
const NewlinePair = 256

// ByteTokenizer is a byte-level tokenizer: every byte is its own id (0…255), "\n\n" is
// [NewlinePair], and Qwen3's chat tokens are added tokens with their real ids, split out first.
// Its zero value is ready; it is safe for concurrent use.
type ByteTokenizer struct{}

// Encode tokenizes text.
func (ByteTokenizer) Encode(text string) []uint32 {
	var ids []uint32
	for i := 0; i < len(text); {
		if text[i] == '<' {
			if id, n, ok := addedAt(text[i:]); ok {
				ids = append(ids, id)
				i += n
				continue
			}
		}
		if strings.HasPrefix(text[i:], "\n\n") {
			ids = append(ids, NewlinePair)
			i += 2
			continue
		}
		ids = append(ids, uint32(text[i]))
		i++
	}
	return ids
}

func addedAt(s string) (uint32, int, bool) {
	for _, a := range qwenAdded {
		if strings.HasPrefix(s, a.text) {
			return a.id, len(a.text), true
		}
	}
	return 0, 0, false
}

// Decode concatenates the ids' bytes; invalid UTF-8 becomes U+FFFD.
func (ByteTokenizer) Decode(ids []uint32) string {
	var b []byte
	for _, id := range ids {
		switch {
		case id < 256:
			b = append(b, byte(id))
		case id == NewlinePair:
			b = append(b, "\n\n"...)
		default:
			for _, a := range qwenAdded {
				if a.id == id {
					b = append(b, a.text...)
				}
			}
		}
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// TokenID looks up an added token (or a single byte, or "\n\n").
func (ByteTokenizer) TokenID(token string) (uint32, bool) {
	for _, a := range qwenAdded {
		if a.text == token {
			return a.id, true
		}
	}
	switch {
	case token == "\n\n":
		return NewlinePair, true
	case len(token) == 1:
		return uint32(token[0]), true
	}
	return 0, false
}

// IsSpecial reports whether id is one of the special added tokens.
func (ByteTokenizer) IsSpecial(id uint32) bool {
	for _, a := range qwenAdded {
		if a.id == id {
			return a.special
		}
	}
	return false
}

// VocabSize is the largest known id + 1.
func (ByteTokenizer) VocabSize() int { return 151669 }
