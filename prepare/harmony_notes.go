package prepare

import (
	"encoding/json"
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
	enc      *harmony.Encoder
	prev     map[string]string // the previous checkpoint's notes (its conversation's)
	preamble string            // the preamble the turn rendered with (its note)
	// dropped are the indexes in the request's input of the items the continuation left out
	// (harmony.Conversation.DroppedItems).
	dropped []int
}

func newHarmonyNotes(enc *harmony.Encoder, in *Input, startDate string, req harmony.Request, conv *harmony.Conversation) *harmonyNotes {
	n := &harmonyNotes{enc: enc, preamble: preambleOf(in, startDate).note()}
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
	if n.preamble != "" && n.prev[preambleKey] != n.preamble {
		add(preambleKey, n.preamble)
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

// preambleKey is the notes key of the conversation's Harmony preamble (no item has an empty id).
const preambleKey = ""

// harmonyPreamble is what a gpt-oss conversation's system and developer messages are made of:
// vLLM continues a stored response with the messages of its first turn, system and developer
// messages included ("request params like reasoning and instructions are ignored", its FIXME),
// so a canonical continuation renders them from the chain's first turn, not from the request.
type harmonyPreamble struct {
	Instructions *string         `json:"i"`
	Effort       string          `json:"e,omitempty"`
	Tools        json.RawMessage `json:"t,omitempty"`
	StartDate    string          `json:"d"`
}

func (p harmonyPreamble) note() string {
	b, err := json.Marshal(p)
	if err != nil {
		return "" // not noted: a later turn renders its own (RawMessage holds valid JSON)
	}
	return string(b)
}

// inheritPreamble returns in as vLLM's message-store path renders it: with the instructions,
// effort and tools of the chain's first turn (noted in the previous checkpoint), and that turn's
// start date; in itself and "" when in continues no noted chain. The request's own effort is
// still checked (a 400 as on a first turn).
func inheritPreamble(in *Input) (*Input, string, error) {
	if in.Previous == nil || len(in.StoredIDs) != len(in.Previous.ConversationItemIDs) {
		return in, "", nil
	}
	note, ok := in.Previous.ItemNotes[preambleKey]
	if !ok {
		return in, "", nil
	}
	var pre harmonyPreamble
	if err := json.Unmarshal([]byte(note), &pre); err != nil || pre.StartDate == "" {
		return in, "", nil // unreadable: this request's preamble
	}
	if err := harmony.CheckEffort(in.ReasoningEffort); err != nil {
		return nil, "", err
	}
	c := *in
	c.Instructions, c.EmptyInstructions = "", false
	if pre.Instructions != nil {
		c.Instructions, c.EmptyInstructions = *pre.Instructions, *pre.Instructions == ""
	}
	c.ReasoningEffort, c.Tools = pre.Effort, pre.Tools
	return &c, pre.StartDate, nil
}

// preambleOf is the preamble a turn rendered with.
func preambleOf(in *Input, startDate string) harmonyPreamble {
	p := harmonyPreamble{Effort: in.ReasoningEffort, StartDate: startDate}
	if in.Instructions != "" || in.EmptyInstructions {
		s := in.Instructions
		p.Instructions = &s
	}
	if len(in.Tools) > 0 && string(in.Tools) != "null" {
		p.Tools = in.Tools
	}
	return p
}
