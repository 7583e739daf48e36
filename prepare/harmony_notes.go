package prepare

import (
	"maps"

	"github.com/stitchllm/stitch/render/harmony"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/stream"
)

// harmonyNotes is what a gpt-oss turn needs to note its output items' headers: vLLM continues a
// stored response from the Harmony messages its parser kept (serving.py msg_store), which keep
// the header the model wrote, so the checkpoint keeps it too (harmony.Generated), for every
// output item of the conversation whose header the items path would write differently.
type harmonyNotes struct {
	enc  *harmony.Encoder
	prev map[string]string // the previous checkpoint's notes (its conversation's)
	// dropped are the indexes in the request's input of the items the continuation left out
	// (harmony.Conversation.DroppedItems).
	dropped []int
}

func newHarmonyNotes(enc *harmony.Encoder, in *Input, req harmony.Request, conv *harmony.Conversation) *harmonyNotes {
	n := &harmonyNotes{enc: enc}
	if in.Previous != nil {
		n.prev = in.Previous.ItemNotes
	}
	for _, i := range conv.DroppedItems {
		n.dropped = append(n.dropped, i-req.NewInput)
	}
	return n
}

// AnnotateOutput fills the checkpoint fields that depend on the generated output, after
// [Prompt.Annotate]: for gpt-oss, cp.ItemNotes, the Harmony header of each output item of the
// conversation that the items path would render otherwise (a call's `<|constrain|>json`, a
// preamble's commentary channel, a message the output stopped inside), so that a continuation,
// by artifact or by full render alike, renders the messages vLLM's message store holds. It does
// nothing for other engines.
func (p *Prompt) AnnotateOutput(cp *store.Checkpoint, out Output) {
	if p.notes == nil {
		return
	}
	cp.ItemNotes = p.notes.build(cp, out)
}

// build returns the previous notes plus those of this turn's input and output items (nil when
// there are none).
func (n *harmonyNotes) build(cp *store.Checkpoint, out Output) map[string]string {
	var notes map[string]string
	add := func(id, note string) {
		if notes == nil {
			notes = make(map[string]string, len(n.prev)+4)
			maps.Copy(notes, n.prev)
		}
		notes[id] = note
	}
	for _, i := range n.dropped {
		if i >= 0 && i < len(cp.InputItemIDs) {
			add(cp.InputItemIDs[i], harmony.NoteDropped)
		}
	}
	ids := out.TokenIDs()
	for _, r := range out.Ranges() {
		g, ok := n.header(ids, r)
		if !ok || g.Default(r.Type) {
			continue
		}
		if note, ok := g.Note(); ok {
			add(r.ItemID, note)
		}
	}
	if notes == nil && len(n.prev) > 0 {
		return n.prev // unchanged: shared, never written
	}
	return notes
}

// header reads the header of the message item r came from: its ids from r.Start (the message's
// <|start|>, or its first header id when the prompt opened it) to <|message|>.
func (n *harmonyNotes) header(ids []uint32, r stream.ItemRange) (harmony.Generated, bool) {
	if r.Start < 0 || r.End > len(ids) || r.Start >= r.End {
		return harmony.Generated{}, false
	}
	msg := ids[r.Start:r.End]
	roleKnown := true
	if msg[0] == harmony.TokenStart {
		msg, roleKnown = msg[1:], false
	}
	end := -1
	for i, id := range msg {
		if id == harmony.TokenMessage {
			end = i
			break
		}
	}
	if end < 0 {
		return harmony.Generated{}, false // the header is not in the output (a forced call's)
	}
	rcpt, ch, ct, ok := stream.ParseHarmonyHeader(n.enc.Decode(msg[:end]), roleKnown)
	if !ok {
		return harmony.Generated{}, false
	}
	g := harmony.Generated{Channel: ch, Recipient: rcpt, ContentType: ct}
	switch ids[r.End-1] {
	case harmony.TokenEnd, harmony.TokenCall, harmony.TokenReturn:
	default:
		g = harmony.Generated{Unfinished: true}
	}
	return g, true
}
