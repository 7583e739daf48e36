package sim

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// fillerWords is the vocabulary of the scripted model's prose: common English words, each a single
// pre-token with a leading space, so the text's token count is the sum of the words' counts.
var fillerWords = strings.Fields(`
the a of and to in is that it for on with as was at by this be from or are an have not which
one all were when we there can more if will about has would each other their time these some
them so what up out into only its two may could way than first been who now people over most
then my just also after very well where through much before any same how too long little good
under great state still new small year own between last might never while both under number
part place case point system group fact hand high world work life home water room mother area
money story lesson night thing study book eye job word business issue side kind head house
service friend power hour game line end member law car city community name president team minute
idea kid body information back parent face others level office door health person art war
history party result change morning reason research girl guy moment air teacher force education
`)

// proseWriter produces deterministic prose of about a requested number of tokens. Token counts of
// each word form are computed once from the real tokenizer.
type proseWriter struct {
	plain []int // tokens of " "+word
	title []int // tokens of " "+Title(word)
	lead  []int // tokens of Title(word), for the first word of a paragraph
	dot   int   // tokens of "."
	para  int   // tokens of ".\n\n" (one pre-token in byte-level BPE patterns)
}

func newProseWriter(tok Tokenizer) *proseWriter {
	p := &proseWriter{
		plain: make([]int, len(fillerWords)),
		title: make([]int, len(fillerWords)),
		lead:  make([]int, len(fillerWords)),
		dot:   len(tok.Encode(".")),
		para:  len(tok.Encode(".\n\n")),
	}
	for i, w := range fillerWords {
		t := titleCase(w)
		p.plain[i] = len(tok.Encode(" " + w))
		p.title[i] = len(tok.Encode(" " + t))
		p.lead[i] = len(tok.Encode(t))
	}
	return p
}

func titleCase(w string) string {
	r, n := utf8.DecodeRuneInString(w)
	return string(unicode.ToUpper(r)) + w[n:]
}

// rng is the part of math/rand/v2's *Rand the writers use.
type rng interface {
	IntN(n int) int
	Float64() float64
}

// write appends to b prose of about n tokens (never fewer than n unless n <= 0): sentences of 5 to
// 14 words, paragraphs of up to three sentences separated by a blank line. The first word is
// capitalized without a leading space when b is empty or ends a line.
func (p *proseWriter) write(b *strings.Builder, r rng, n int) {
	used := 0
	atParagraph := b.Len() == 0 || strings.HasSuffix(b.String(), "\n")
	sentences := 0
	for used < n {
		words := 5 + r.IntN(10)
		for i := 0; i < words && used < n; i++ {
			k := r.IntN(len(fillerWords))
			w := fillerWords[k]
			switch {
			case i == 0 && atParagraph:
				b.WriteString(titleCase(w))
				used += p.lead[k]
			case i == 0:
				b.WriteString(" " + titleCase(w))
				used += p.title[k]
			default:
				b.WriteString(" " + w)
				used += p.plain[k]
			}
			atParagraph = false
		}
		sentences++
		if sentences%3 == 0 && used+p.para < n {
			b.WriteString(".\n\n")
			used += p.para
			atParagraph = true
			continue
		}
		b.WriteString(".")
		used += p.dot
	}
}
