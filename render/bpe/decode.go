package bpe

import "unicode/utf8"

// appendTokenBytes appends the bytes id stands for; unknown ids add nothing (as in the Rust crate,
// which skips ids it cannot map to a token).
func (t *Tokenizer) appendTokenBytes(dst []byte, id uint32) []byte {
	if !t.isKnown(id) {
		return dst
	}
	return append(dst, t.arena[t.tokSpans[2*id]:t.tokSpans[2*id+1]]...)
}

// Decode returns the text of ids like the Rust crate's decode(ids, skip_special_tokens=false) with
// the ByteLevel decoder: the bytes of all tokens, concatenated, read as UTF-8 with each maximal
// invalid subsequence replaced by one U+FFFD (Rust's String::from_utf8_lossy). Added tokens decode to
// their content; unknown ids are skipped.
func (t *Tokenizer) Decode(ids []uint32) string {
	if t.spm != nil {
		return t.decodeSPM(ids) // the file's decoder chain (decoders.go)
	}
	buf := make([]byte, 0, len(ids)*4)
	for _, id := range ids {
		buf = t.appendTokenBytes(buf, id)
	}
	if utf8.Valid(buf) {
		return string(buf)
	}
	out, _ := appendLossy(make([]byte, 0, len(buf)+8), buf, true)
	return string(out)
}

// appendLossy appends the UTF-8 reading of b to dst, each maximal invalid subsequence replaced by
// U+FFFD. Unless final, a trailing sequence that is incomplete but could still become valid is not
// consumed; appendLossy returns how many bytes of b it consumed.
func appendLossy(dst, b []byte, final bool) ([]byte, int) {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			dst = append(dst, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			dst = append(dst, b[i:i+size]...)
			i += size
			continue
		}
		n, complete := maximalSubpart(b[i:])
		if !complete && !final && i+n == len(b) {
			return dst, i
		}
		dst = append(dst, "\uFFFD"...)
		i += n
	}
	return dst, i
}

// maximalSubpart returns the length of the maximal subpart of an ill-formed sequence at the start
// of b (Unicode 3.9, "U+FFFD substitution of maximal subparts", which Rust follows), and whether it
// is cut short by the end of b rather than by a bad byte.
func maximalSubpart(b []byte) (int, bool) {
	c := b[0]
	lo, hi := byte(0x80), byte(0xBF)
	var need int
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 2
	case c == 0xE0:
		need, lo = 3, 0xA0
	case c == 0xED:
		need, hi = 3, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 3
	case c == 0xF0:
		need, lo = 4, 0x90
	case c == 0xF4:
		need, hi = 4, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 4
	default:
		return 1, true
	}
	for i := 1; i < need; i++ {
		if i == len(b) {
			return i, false
		}
		if b[i] < lo || b[i] > hi {
			return i, true
		}
		lo, hi = 0x80, 0xBF
	}
	return need, true // unreachable for an ill-formed start
}

// DecodeStream decodes ids one at a time for streaming output. It holds back the bytes of a UTF-8
// sequence until the sequence is complete, so it never emits a broken character, and the
// concatenation of every Next and the final Flush equals [Tokenizer.Decode] of all the ids.
// A DecodeStream is not safe for concurrent use; the zero value is not usable.
type DecodeStream struct {
	t       *Tokenizer
	pending []byte
	out     []byte
	spm     *spmStream // SentencePiece-style files (decoders.go)
}

// NewDecodeStream returns a DecodeStream for t.
func (t *Tokenizer) NewDecodeStream() *DecodeStream {
	if t.spm != nil {
		return &DecodeStream{t: t, spm: &spmStream{st: t.spm.decoder.newState()}}
	}
	return &DecodeStream{t: t}
}

// Next adds id and returns the text it completes: "" while a UTF-8 sequence is still incomplete.
func (d *DecodeStream) Next(id uint32) string {
	if d.spm != nil {
		return d.spm.next(d.t, id)
	}
	d.pending = d.t.appendTokenBytes(d.pending, id)
	if len(d.pending) == 0 {
		return ""
	}
	var n int
	d.out, n = appendLossy(d.out[:0], d.pending, false)
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return string(d.out)
}

// Flush returns whatever is held (an incomplete sequence, as one U+FFFD) and resets the stream.
func (d *DecodeStream) Flush() string {
	if d.spm != nil {
		return d.spm.flush(d.t)
	}
	if len(d.pending) == 0 {
		return ""
	}
	d.out, _ = appendLossy(d.out[:0], d.pending, true)
	d.pending = d.pending[:0]
	return string(d.out)
}
