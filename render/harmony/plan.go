package harmony

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"fmt"
	"hash"
	"io"
	"slices"

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
	prefix, each, _, err = p.digestsFrom(withEach, nil)
	return prefix, each, err
}

// DigestState is what MessageDigestsFrom leaves for the next turn of the conversation: the
// rendered messages, their digests, and the conversation hash's state after each of the last
// few. Immutable; it shares the plan's messages.
type DigestState struct {
	enc          *Encoder // whose scripts were hashed
	msgs         []Message
	keep         []int
	fnTools      bool
	prefix, each [][render.DigestSize]byte
	states       []digestHashState
}

// digestHashState is the marshaled conversation hash after rendered message at.
type digestHashState struct {
	at    int
	state []byte
}

// keptDigestStates is how many of the last messages' hash states a DigestState keeps: a turn
// resumes after the previous prompt's last message, or a few before it.
const keptDigestStates = 4

// Bytes estimates the memory s holds beyond the messages it shares.
func (s *DigestState) Bytes() int {
	if s == nil {
		return 0
	}
	n := 96 + 2*len(s.prefix)*render.DigestSize + 8*len(s.keep)
	for _, st := range s.states {
		n += 32 + len(st.state)
	}
	return n
}

// MessageDigestsFrom is MessageDigests resuming from prev, the state the previous turn of the
// conversation left (nil: none): the leading rendered messages equal to prev's keep their
// digests, and the conversation hash resumes after the last of them prev kept a state for, so a
// continuation hashes only its new messages instead of its whole history (issue 20: ~0.3 ms at
// 100k tokens). The digests are MessageDigests' (TestMessageDigestsFrom). It also returns the
// state for the next turn.
func (p *Plan) MessageDigestsFrom(prev *DigestState) (prefix, each [][render.DigestSize]byte, next *DigestState, err error) {
	return p.digestsFrom(true, prev)
}

func (p *Plan) digestsFrom(withEach bool, prev *DigestState) (prefix, each [][render.DigestSize]byte, next *DigestState, err error) {
	h := sha256.New()
	w := writer{enc: p.enc, h: h}
	var m hash.Hash
	if withEach {
		m = sha256.New()
		w.h = teeHash{Hash: h, each: m}
		each = make([][render.DigestSize]byte, len(p.keep))
	}
	prefix = make([][render.DigestSize]byte, len(p.keep))
	first := p.resume(h, prev)
	if first > 0 {
		copy(prefix, prev.prefix[:first])
		copy(each, prev.each[:first])
	}
	keepFrom := len(p.keep) - keptDigestStates
	var states []digestHashState
	if withEach && prev != nil {
		for _, st := range prev.states {
			if st.at >= keepFrom && st.at < first {
				states = append(states, st)
			}
		}
	}
	var sum [sha256.Size]byte
	for i := first; i < len(p.keep); i++ {
		k := p.keep[i]
		if m != nil {
			m.Reset()
		}
		if err := w.message(&p.msgs[k], p.fnTools); err != nil {
			return nil, nil, nil, fmt.Errorf("harmony: message %d: %w", k, err)
		}
		copy(prefix[i][:], h.Sum(sum[:0]))
		if m != nil {
			copy(each[i][:], m.Sum(sum[:0]))
		}
		if withEach && i >= keepFrom {
			if st, err := h.(encoding.BinaryMarshaler).MarshalBinary(); err == nil {
				states = append(states, digestHashState{at: i, state: st})
			}
		}
	}
	if withEach {
		next = &DigestState{enc: p.enc, msgs: p.msgs, keep: p.keep, fnTools: p.fnTools, prefix: prefix, each: each, states: states}
	}
	return prefix, each, next, nil
}

// resume sets h to prev's state after the last leading rendered message equal to prev's for
// which prev kept one, and returns the number of messages it covers (0: h untouched).
func (p *Plan) resume(h hash.Hash, prev *DigestState) int {
	if prev == nil || prev.enc != p.enc || prev.fnTools != p.fnTools || len(prev.states) == 0 {
		return 0
	}
	// Only messages from the first state's on can be resumed after; those before are compared
	// too, since a state stands for all of them.
	same := 0
	for same < len(p.keep) && same < len(prev.keep) && sameMessage(&p.msgs[p.keep[same]], &prev.msgs[prev.keep[same]]) {
		same++
	}
	for j := len(prev.states) - 1; j >= 0; j-- {
		if st := prev.states[j]; st.at < same {
			if h.(encoding.BinaryUnmarshaler).UnmarshalBinary(st.state) != nil {
				h.Reset()
				return 0
			}
			return st.at + 1
		}
	}
	return 0
}

// sameMessage reports whether a and b render the same script (given the same fnTools): equal in
// every field. Strings a conversation's item cache shares compare by pointer.
func sameMessage(a, b *Message) bool {
	if a.Role != b.Role || a.Name != b.Name || a.Recipient != b.Recipient || a.Channel != b.Channel ||
		a.ContentType != b.ContentType || !slices.Equal(a.Parts, b.Parts) {
		return false
	}
	if (a.System == nil) != (b.System == nil) || (a.Developer == nil) != (b.Developer == nil) {
		return false
	}
	if a.System != nil {
		x, y := a.System, b.System
		if x.ModelIdentity != y.ModelIdentity || x.KnowledgeCutoff != y.KnowledgeCutoff || x.StartDate != y.StartDate ||
			x.Effort != y.Effort || x.ChannelRequired != y.ChannelRequired || !slices.Equal(x.ValidChannels, y.ValidChannels) {
			return false
		}
	}
	if a.Developer != nil {
		x, y := a.Developer, b.Developer
		if (x.Instructions == nil) != (y.Instructions == nil) || x.Instructions != nil && *x.Instructions != *y.Instructions {
			return false
		}
		if !slices.EqualFunc(x.Tools, y.Tools, func(s, t ToolDescription) bool {
			return s.Name == t.Name && s.Description == t.Description && bytes.Equal(s.Parameters, t.Parameters) &&
				(s.Parameters == nil) == (t.Parameters == nil)
		}) {
			return false
		}
	}
	return true
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
