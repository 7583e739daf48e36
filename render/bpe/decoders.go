package bpe

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The decoder chain of the SentencePiece-style pipeline: the crate's Sequence of Replace,
// ByteFallback, Fuse and Strip decoders. Every step but ByteFallback and Fuse maps each token on its
// own; ByteFallback turns each run of "<0xXX>" tokens into the UTF-8 text of its bytes (or one
// U+FFFD per byte when the run is not valid UTF-8); Fuse joins all tokens into one, so a Strip after
// it cuts characters from the start of the whole text only. Decoding feeds tokens one at a time, so
// [Tokenizer.Decode] and [DecodeStream] share one implementation and always agree.

// tokenStep is a decoder step that maps each token on its own.
type tokenStep struct {
	replace          bool
	pattern, content string // Replace: a literal pattern
	strip            rune   // Strip: remove up to start leading strip characters
	start, stop      int    // stop is always 0 (refused otherwise)
	// Metaspace (tokenizers' decoders, metaspace.rs): every replacement becomes " ", except in the
	// first token of the list when prepend_scheme is not "never", where every one is dropped.
	metaspace  bool
	dropFirst  bool
	metaSymbol string
}

// apply maps tok, the index-th token of the list this step sees.
func (s tokenStep) apply(tok string, index int) string {
	if s.replace {
		return strings.ReplaceAll(tok, s.pattern, s.content)
	}
	if s.metaspace {
		if index == 0 && s.dropFirst {
			return strings.ReplaceAll(tok, s.metaSymbol, "")
		}
		return strings.ReplaceAll(tok, s.metaSymbol, " ")
	}
	if !strings.ContainsRune(tok, s.strip) {
		return tok
	}
	for i := 0; i < s.start && tok != ""; i++ {
		r, n := utf8.DecodeRuneInString(tok)
		if r != s.strip {
			break
		}
		tok = tok[n:]
	}
	return tok
}

// decoderChain is a parsed decoder: per-token steps before ByteFallback (all of them when there is
// none), ByteFallback, per-token steps after it, then Fuse and a Strip of the fused text's start.
type decoderChain struct {
	pre          []tokenStep
	byteFallback bool
	post         []tokenStep
	fused        bool
	// after Fuse: strip up to stripStart leading stripRune characters of the whole text.
	stripRune  rune
	stripStart int
}

// parseDecoderChain reads a decoder (a single step or a Sequence) and refuses step orders it cannot
// stream exactly.
func parseDecoderChain(raw string) (decoderChain, error) {
	var d decoderChain
	var c spmComponentJSON
	if err := decodeStrict(raw, &c, "decoder"); err != nil {
		return d, err
	}
	steps := []spmComponentJSON{c}
	if c.Type == "Sequence" {
		steps = c.Decoders
	}
	for _, s := range steps {
		switch s.Type {
		case "Replace":
			lit, ok := s.Pattern.literal()
			if !ok || lit == "" {
				return d, unsupported("decoder Replace with pattern %s", s.Pattern.describe())
			}
			content, err := s.contentString("decoder")
			if err != nil {
				return d, err
			}
			if d.fused {
				return d, unsupported("decoder Replace after Fuse")
			}
			d.addTokenStep(tokenStep{replace: true, pattern: lit, content: content})
		case "ByteFallback":
			if d.byteFallback || d.fused {
				return d, unsupported("decoder ByteFallback twice or after Fuse")
			}
			d.byteFallback = true
		case "Fuse":
			d.fused = true
		case "Metaspace":
			if d.fused {
				return d, unsupported("decoder Metaspace after Fuse")
			}
			rep, err := metaspaceReplacement(s, "decoder")
			if err != nil {
				return d, err
			}
			scheme, err := parsePrependScheme(s, "decoder")
			if err != nil {
				return d, err
			}
			d.addTokenStep(tokenStep{metaspace: true, metaSymbol: rep, dropFirst: scheme != prependNever})
		case "Strip":
			step, err := stripStep(s)
			if err != nil {
				return d, err
			}
			switch {
			case step.stop != 0:
				// The crate indexes past the start of a token shorter than stop (a panic there).
				return d, unsupported("decoder Strip with stop=%d", step.stop)
			case !d.fused:
				d.addTokenStep(step)
			case d.stripStart != 0 && step.start != 0 && step.strip != d.stripRune:
				return d, unsupported("decoder: two Strips of different characters after Fuse")
			case step.start != 0:
				d.stripRune = step.strip
				d.stripStart += step.start
			}
		default:
			return d, unsupported("decoder %q", s.Type)
		}
	}
	return d, nil
}

func (d *decoderChain) addTokenStep(s tokenStep) {
	if d.byteFallback {
		d.post = append(d.post, s)
	} else {
		d.pre = append(d.pre, s)
	}
}

func stripStep(c spmComponentJSON) (tokenStep, error) {
	if c.Content == nil || c.Start == nil || c.Stop == nil {
		return tokenStep{}, fmt.Errorf("%w: decoder Strip needs content, start and stop", ErrInvalid)
	}
	var s string
	if err := json.Unmarshal(*c.Content, &s); err != nil || utf8.RuneCountInString(s) != 1 {
		return tokenStep{}, fmt.Errorf("%w: decoder Strip content must be one character", ErrInvalid)
	}
	if *c.Start < 0 || *c.Stop < 0 {
		return tokenStep{}, fmt.Errorf("%w: decoder Strip with a negative count", ErrInvalid)
	}
	r, _ := utf8.DecodeRuneInString(s)
	return tokenStep{strip: r, start: *c.Start, stop: *c.Stop}, nil
}

// byteTokenValue reports the byte a "<0xXX>" token stands for, as the crate's ByteFallback reads
// it: six bytes, "<0x", two characters u8::from_str_radix accepts in base 16 (hex digits of either
// case, or "+" and one digit), ">".
func byteTokenValue(tok string) (byte, bool) {
	if len(tok) != 6 || tok[:3] != "<0x" || tok[5] != '>' {
		return 0, false
	}
	hi, lo := tok[3], tok[4]
	if hi == '+' {
		v, ok := hexValue(lo)
		return v, ok
	}
	h, ok1 := hexValue(hi)
	l, ok2 := hexValue(lo)
	if !ok1 || !ok2 {
		return 0, false
	}
	return h<<4 | l, true
}

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// chainState is the state of one decoding: the pending run of byte tokens, how much of the
// fused text's start is still to strip, and how many tokens the steps before and after
// ByteFallback have seen (Metaspace treats the first one apart).
type chainState struct {
	run           []byte
	stripLeft     int
	pushed, emits int
}

func (d *decoderChain) newState() chainState { return chainState{stripLeft: d.stripStart} }

// push appends the text that tok completes to out. The bytes of "<0xXX>" tokens are held until a
// token of another kind ends their run.
func (d *decoderChain) push(st *chainState, out []byte, tok string) []byte {
	for _, s := range d.pre {
		tok = s.apply(tok, st.pushed)
	}
	st.pushed++
	if d.byteFallback {
		if b, ok := byteTokenValue(tok); ok {
			st.run = append(st.run, b)
			return out
		}
		out = d.flushRun(st, out)
	}
	return d.emit(st, out, tok)
}

// flush appends whatever is held (an unfinished run of byte tokens).
func (d *decoderChain) flush(st *chainState, out []byte) []byte {
	return d.flushRun(st, out)
}

func (d *decoderChain) flushRun(st *chainState, out []byte) []byte {
	if len(st.run) == 0 {
		return out
	}
	if utf8.Valid(st.run) {
		out = d.emit(st, out, string(st.run))
	} else {
		for range st.run {
			out = d.emit(st, out, "\uFFFD")
		}
	}
	st.run = st.run[:0]
	return out
}

func (d *decoderChain) emit(st *chainState, out []byte, tok string) []byte {
	for _, s := range d.post {
		tok = s.apply(tok, st.emits)
	}
	st.emits++
	for st.stripLeft > 0 && tok != "" {
		r, n := utf8.DecodeRuneInString(tok)
		if r != d.stripRune {
			st.stripLeft = 0
			break
		}
		tok = tok[n:]
		st.stripLeft--
	}
	return append(out, tok...)
}

// tokenString returns the spelling of id (an added token's content or a vocab token), and whether
// id is known; the crate skips unknown ids.
func (t *Tokenizer) tokenString(id uint32) (string, bool) {
	if !t.isKnown(id) {
		return "", false
	}
	return t.arena[t.tokSpans[2*id]:t.tokSpans[2*id+1]], true
}

// decodeSPM is Decode for the SentencePiece-style pipeline.
func (t *Tokenizer) decodeSPM(ids []uint32) string {
	d := &t.spm.decoder
	st := d.newState()
	out := make([]byte, 0, len(ids)*4)
	for _, id := range ids {
		if tok, ok := t.tokenString(id); ok {
			out = d.push(&st, out, tok)
		}
	}
	return string(d.flush(&st, out))
}

// spmStream is the DecodeStream state of the SentencePiece-style pipeline.
type spmStream struct {
	st  chainState
	out []byte
}

func (s *spmStream) next(t *Tokenizer, id uint32) string {
	tok, ok := t.tokenString(id)
	if !ok {
		return ""
	}
	s.out = t.spm.decoder.push(&s.st, s.out[:0], tok)
	return string(s.out)
}

func (s *spmStream) flush(t *Tokenizer) string {
	s.out = t.spm.decoder.flush(&s.st, s.out[:0])
	return string(s.out)
}
