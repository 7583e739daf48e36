package harmony

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"io"

	"github.com/stitchllm/stitch/render"
)

// Plan is a conversation laid out as [Encoder.Render] renders it, one message at a time: the
// messages auto_drop_analysis keeps, each of which encodes on its own (every message starts with
// <|start|> and every piece of it is encoded separately), so a prompt's ids are the concatenation
// of its messages' ids followed by the generation prompt. It is what a token artifact needs to
// reuse a previous prompt's ids message by message (prepare's Harmony artifacts): [Plan.Digests]
// says, without encoding, up to which message two conversations render the same ids.
type Plan struct {
	enc     *Encoder
	msgs    []Message
	keep    []int // indices in msgs of the rendered messages, in order
	fnTools bool
}

// Plan lays out msgs as Render(msgs, opts) renders them. The result shares msgs.
func (e *Encoder) Plan(msgs []Message, opts RenderOptions) *Plan {
	p := &Plan{enc: e, msgs: msgs, fnTools: hasFunctionTools(msgs)}
	_, dropBefore := dropped(msgs, opts)
	for i := range msgs {
		if i < dropBefore && msgs[i].Channel == ChannelAnalysis {
			continue
		}
		p.keep = append(p.keep, i)
	}
	return p
}

// Len is the number of rendered messages.
func (p *Plan) Len() int { return len(p.keep) }

// Index returns the index in the planned messages of rendered message i.
func (p *Plan) Index(i int) int { return p.keep[i] }

// Digests returns, for each rendered message i, the digest of the render script of messages
// 0..i: the special ids and text pieces, in order, that their ids are made of. Equal digests
// mean equal ids (each piece encodes on its own); computing them encodes nothing. An error is a
// message Render refuses.
func (p *Plan) Digests() ([][render.DigestSize]byte, error) {
	prefix, _, err := p.digests(false)
	return prefix, err
}

// MessageDigests returns Digests and, for each rendered message, the digest of its own render
// script: two messages with equal digests have equal ids wherever they sit, so a continuation
// whose history shifted (auto_drop_analysis dropping the analysis before a final answer) copies
// a message's ids from the previous prompt instead of encoding it again.
func (p *Plan) MessageDigests() (prefix, each [][render.DigestSize]byte, err error) {
	return p.digests(true)
}

func (p *Plan) digests(withEach bool) (prefix, each [][render.DigestSize]byte, err error) {
	h := sha256.New()
	w := writer{enc: p.enc, h: h}
	var m hash.Hash
	if withEach {
		m = sha256.New()
		w.h = teeHash{Hash: h, each: m}
		each = make([][render.DigestSize]byte, len(p.keep))
	}
	prefix = make([][render.DigestSize]byte, len(p.keep))
	var sum [sha256.Size]byte
	for i, k := range p.keep {
		if m != nil {
			m.Reset()
		}
		if err := w.message(&p.msgs[k], p.fnTools); err != nil {
			return nil, nil, fmt.Errorf("harmony: message %d: %w", k, err)
		}
		copy(prefix[i][:], h.Sum(sum[:0]))
		if m != nil {
			copy(each[i][:], m.Sum(sum[:0]))
		}
	}
	return prefix, each, nil
}

// teeHash writes to the conversation's hash and to the current message's.
type teeHash struct {
	hash.Hash
	each hash.Hash
}

func (t teeHash) Write(b []byte) (int, error) {
	t.each.Write(b)
	return t.Hash.Write(b)
}

func (t teeHash) WriteString(s string) (int, error) {
	io.WriteString(t.each, s)
	return io.WriteString(t.Hash, s)
}

// AppendMessage appends the ids of rendered message i to dst, exactly as Render encodes it.
func (p *Plan) AppendMessage(dst []uint32, i int) ([]uint32, error) {
	w := writer{enc: p.enc, ids: dst, noText: true}
	if err := w.message(&p.msgs[p.keep[i]], p.fnTools); err != nil {
		return dst, fmt.Errorf("harmony: message %d: %w", p.keep[i], err)
	}
	return w.ids, nil
}

// AppendGenerationPrompt appends "<|start|>assistant", the prompt for the model's next turn, to
// dst.
func (e *Encoder) AppendGenerationPrompt(dst []uint32) []uint32 {
	w := writer{enc: e, ids: dst, noText: true}
	w.special(TokenStart, "<|start|>")
	w.text(string(RoleAssistant))
	return w.ids
}
