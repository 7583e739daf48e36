package family

import (
	"strings"
	"unicode"

	"github.com/stitchllm/stitch/internal/jsonappend"
	"github.com/stitchllm/stitch/stream"
)

// Qwen3 is the Qwen3 family (also Qwen2.5 and QwQ): hermes tool calls
// `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>` (vLLM --tool-call-parser hermes) and
// `<think>…</think>` reasoning (--reasoning-parser qwen3), turns closed by <|im_end|>. The output
// parser is stream.Parser.
type Qwen3 struct {
	parser stream.ParserOptions // marker ids and end-of-turn ids; per-turn fields zero
	stop   []uint32
	end    uint32
}

var _ Family = (*Qwen3)(nil)

// newQwen3 binds the family to a vocabulary: marker ids are looked up by their text (the Qwen3
// ids when the vocabulary lacks one); the parser ends at the model's stop ids.
func newQwen3(v Vocabulary) (Family, error) {
	q := &Qwen3{parser: stream.Qwen3Options(), stop: v.StopTokenIDs}
	q.parser.ParallelToolCalls = false // per turn (Turn)
	for _, m := range []struct {
		text string
		dst  *uint32
	}{{"<think>", &q.parser.ThinkStart}, {"</think>", &q.parser.ThinkEnd}, {"<tool_call>", &q.parser.ToolCallStart}, {"</tool_call>", &q.parser.ToolCallEnd}} {
		if v.TokenID == nil {
			break
		}
		if id, ok := v.TokenID(m.text); ok {
			*m.dst = id
		}
	}
	q.parser.EndOfTurn = append([]uint32(nil), v.StopTokenIDs...)
	// The template closes every message with <|im_end|>; a vocabulary without it closes turns with
	// its first stop id.
	switch id, ok := tokenID(v, "<|im_end|>"); {
	case ok:
		q.end = id
	case len(v.StopTokenIDs) > 0:
		q.end = v.StopTokenIDs[0]
	}
	return q, nil
}

func tokenID(v Vocabulary, text string) (uint32, bool) {
	if v.TokenID == nil {
		return 0, false
	}
	return v.TokenID(text)
}

// NewParser implements Family.
func (q *Qwen3) NewParser(dec stream.TokenDecoder, t Turn) stream.OutputParser {
	opts := q.parser
	opts.ThinkingOpen = t.ReasoningOpen
	opts.ParallelToolCalls = t.ParallelToolCalls
	return stream.NewParser(dec, opts)
}

// StopTokenIDs implements Family.
func (q *Qwen3) StopTokenIDs() []uint32 { return q.stop }

// ForcedToolCall implements Family: the model continues "<tool_call>\n" (any function) or
// "<tool_call>\n{\"name\": \"f\", \"arguments\": " (function f), as the hermes format it was
// trained on writes a call.
func (q *Qwen3) ForcedToolCall(name string) string {
	if name == "" {
		return "<tool_call>\n"
	}
	return "<tool_call>\n{\"name\": " + string(jsonappend.String(nil, name)) + ", \"arguments\": "
}

// EndOfTurn implements Family.
func (q *Qwen3) EndOfTurn() uint32 { return q.end }

// CloseTurn implements Family: the template closes every assistant turn with <|im_end|>.
func (q *Qwen3) CloseTurn(ids []uint32) []uint32 {
	if len(ids) == 0 || ids[len(ids)-1] != q.end {
		ids = append(ids, q.end)
	}
	return ids
}

// ReasoningSwitch implements Family: Qwen3's chat template reads enable_thinking.
func (q *Qwen3) ReasoningSwitch() string { return "enable_thinking" }

// OpensReasoning implements Family: the prompt ends with <think> and white space.
func (q *Qwen3) OpensReasoning(prompt string) bool {
	// Only white space may follow the opening tag, so it ends the trimmed prompt; searching from
	// the end keeps this independent of the conversation's length.
	return strings.HasSuffix(strings.TrimRightFunc(prompt, unicode.IsSpace), "<think>")
}
