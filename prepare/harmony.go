package prepare

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"github.com/stitchllm/stitch/render/harmony"
)

// Harmony configures the prompt engine of a gpt-oss model: vLLM's /v1/responses does not apply
// the chat template to gpt-oss but maps the Responses items to Harmony messages and renders them
// with openai_harmony (vllm/entrypoints/openai/serving_responses.py _make_request_with_harmony,
// render_for_completion in vllm/entrypoints/openai/parser/harmony_utils.py). [New] then returns
// a [HarmonyArtifacts] (with an artifact store) or a [HarmonyRender].
type Harmony struct {
	// Encoder renders Harmony messages with the model's tokenizer.json. Required.
	Encoder *harmony.Encoder
	// Options are the deployment's Harmony settings. An empty StartDate means today's date per
	// turn, as vLLM without VLLM_SYSTEM_START_DATE: the prompt's first tokens then change when
	// the day rolls over.
	Options harmony.Options
	// Now is the clock behind an unpinned start date; nil: time.Now.
	Now func() time.Time
}

// HarmonyRender prepares every turn of a gpt-oss model by a full Harmony render: the ids are
// exactly vLLM's. It keeps no token artifacts (a continuation's outcome is "disabled", as with
// --no-artifacts) and has no exact mode; [HarmonyArtifacts] adds both. It is safe for
// concurrent use.
type HarmonyRender struct {
	h Harmony
}

var _ Engine = HarmonyRender{}

// NewHarmonyRender returns the Harmony engine of h; it panics without h.Encoder.
func NewHarmonyRender(h Harmony) HarmonyRender {
	if h.Encoder == nil {
		panic("prepare: NewHarmonyRender needs an Encoder")
	}
	if h.Now == nil {
		h.Now = time.Now
	}
	return HarmonyRender{h: h}
}

// Prepare implements Engine. Bad input (an unsupported reasoning.effort, a malformed item) is a
// *render.InputError naming its param.
func (e HarmonyRender) Prepare(_ context.Context, in *Input) (*Prompt, error) {
	date, req, conv, p, err := e.render(in)
	if err != nil {
		return nil, err
	}
	outcome := OutcomeDisabled
	if in.PreviousID == "" {
		outcome = OutcomeNew
	}
	return &Prompt{IDs: p.IDs, Text: p.Text, Outcome: outcome, SkippedTools: conv.SkippedTools, notes: newHarmonyNotes(e.h.Encoder, req.Input, date, req.Request, conv)}, nil
}

// Render maps the turn to Harmony messages and renders the prompt for the model's next turn,
// with the start date it used.
func (e HarmonyRender) Render(in *Input) (startDate string, p harmony.Prompt, conv *harmony.Conversation, err error) {
	startDate, _, conv, p, err = e.render(in)
	return startDate, p, conv, err
}

// harmonyTurnRequest is a turn's Harmony request and the input it was made from (the chain's
// first turn's preamble when it continues one, inheritPreamble).
type harmonyTurnRequest struct {
	harmony.Request
	Input *Input
}

func (e HarmonyRender) render(in *Input) (string, harmonyTurnRequest, *harmony.Conversation, harmony.Prompt, error) {
	in, date, err := inheritPreamble(in)
	if err != nil {
		return "", harmonyTurnRequest{}, nil, harmony.Prompt{}, err
	}
	opts := e.h.Options
	opts.StartDate = cmp.Or(date, harmony.StartDate(opts.StartDate, e.h.Now()))
	req := harmonyRequest(in)
	conv, p, err := e.h.Encoder.RenderResponses(req, opts)
	return opts.StartDate, harmonyTurnRequest{req, in}, conv, p, err
}

// harmonyRequest is the Harmony form of a turn: in's instructions, tools and effort (on a
// canonical continuation the chain's first ones, inheritPreamble), and the previous
// checkpoint's notes of the earlier outputs' headers.
func harmonyRequest(in *Input) harmony.Request {
	req := harmony.Request{Effort: in.ReasoningEffort, Items: in.Items, ItemParam: in.ItemParam, Tenant: in.Tenant, StoredIDs: in.StoredIDs}
	if in.Instructions != "" || in.EmptyInstructions {
		s := in.Instructions
		req.Instructions = &s
	}
	if len(in.Tools) > 0 {
		req.Tools = json.RawMessage(in.Tools)
	}
	if in.Previous != nil && len(in.StoredIDs) == len(in.Previous.ConversationItemIDs) {
		// vLLM's message-store path: the earlier output items as the model wrote them, and the
		// new input as a continuation maps it.
		req.Notes, req.NewInput = in.Previous.ItemNotes, len(in.StoredIDs)
	}
	return req
}
