package sim

import (
	"strings"

	"github.com/stitchllm/stitch/render/bpe"
)

// maxHeldIDs bounds how many ids the fallback decoder holds while their text ends in an
// incomplete UTF-8 sequence (a character is at most 4 bytes, so at most 4 byte tokens).
const maxHeldIDs = 4

// heldDecoder is the fallback [StreamDecoder] for tokenizers without their own: it decodes the
// ids held since the last emitted text and emits once the text no longer ends in U+FFFD. This is
// exact for byte-level decoders, where a sequence's text is the concatenation of its ids' bytes.
type heldDecoder struct {
	tok  Tokenizer
	held []uint32
}

func (d *heldDecoder) Next(id uint32) string {
	d.held = append(d.held, id)
	s := d.tok.Decode(d.held)
	if strings.HasSuffix(s, "\uFFFD") && len(d.held) < maxHeldIDs {
		return ""
	}
	d.held = d.held[:0]
	return s
}

func (d *heldDecoder) Flush() string {
	if len(d.held) == 0 {
		return ""
	}
	s := d.tok.Decode(d.held)
	d.held = d.held[:0]
	return s
}

// newStreamDecoder returns tok's own incremental decoder (bpe's DecodeStream for the real
// tokenizer), or the fallback.
func newStreamDecoder(tok Tokenizer) StreamDecoder {
	switch t := tok.(type) {
	case *bpe.Tokenizer:
		return t.NewDecodeStream()
	case StreamingTokenizer:
		return t.NewStreamDecoder()
	}
	return &heldDecoder{tok: tok}
}
