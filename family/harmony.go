package family

import (
	"fmt"

	"github.com/stitchllm/stitch/render/harmony"
	"github.com/stitchllm/stitch/stream"
)

// Harmony is the gpt-oss family: the Harmony format (openai_harmony, encoding HARMONY_GPT_OSS),
// which vLLM serves with --tool-call-parser openai and --reasoning-parser openai_gptoss, and
// selects by itself for a model whose config.json says model_type gpt_oss. Prompts are not
// rendered with a chat template but with package render/harmony (prepare's Harmony engine); the
// output parser is stream.HarmonyParser (analysis → reasoning, commentary to=functions.NAME →
// function_call, commentary without a recipient → a preamble, final → the message).
type Harmony struct{}

var _ Family = Harmony{}

// The o200k_harmony marker ids are render/harmony's (declared there once); newHarmony checks the
// vocabulary agrees, so the family never binds to another tokenizer.
const (
	harmonyReturn uint32 = harmony.TokenReturn // <|return|>: the final answer is done
	harmonyEnd    uint32 = harmony.TokenEnd    // <|end|>: closes every message in history
	harmonyCall   uint32 = harmony.TokenCall   // <|call|>: the model calls a tool
)

// harmonyTokens are the ids the output parser reads.
var harmonyTokens = stream.HarmonyTokens{EndOfText: harmony.TokenEndOfText, Return: harmony.TokenReturn,
	Constrain: harmony.TokenConstrain, Channel: harmony.TokenChannel, Start: harmony.TokenStart, End: harmony.TokenEnd,
	Message: harmony.TokenMessage, Call: harmony.TokenCall}

func newHarmony(v Vocabulary) (Family, error) {
	for _, m := range []struct {
		text string
		id   uint32
	}{{"<|return|>", harmonyReturn}, {"<|end|>", harmonyEnd}, {"<|call|>", harmonyCall}} {
		if id, ok := tokenID(v, m.text); !ok || id != m.id {
			return nil, fmt.Errorf("harmony needs the gpt-oss tokenizer (o200k_harmony): %s is not id %d", m.text, m.id)
		}
	}
	return Harmony{}, nil
}

// NewParser implements Family: Harmony's parser keeps every tool call the model makes (vLLM's
// gpt-oss path has no parallel_tool_calls switch) and needs no reasoning flag (the channel
// header says what each message is).
func (Harmony) NewParser(dec stream.TokenDecoder, _ Turn) stream.OutputParser {
	return stream.NewHarmonyParser(dec, stream.HarmonyOptions{Tokens: harmonyTokens})
}

// StopTokenIDs implements Family: the stop_token_ids vLLM sends with every gpt-oss generation
// (harmony.StopTokenIDs: <|return|> and <|call|>).
func (Harmony) StopTokenIDs() []uint32 { return harmony.StopTokenIDs }

// ForcedToolCall implements Family. vLLM's gpt-oss Responses path does not force calls (it
// refuses any tool_choice but auto and none: _make_request_with_harmony raises "Only 'auto' or
// 'none' tool_choice is supported in response API with Harmony"); stitch forces them in
// Harmony's own format, as the model writes a call after the generation prompt
// "<|start|>assistant":
//
//   - a named function: the whole header, "<|channel|>commentary to=functions.NAME
//     <|constrain|>json<|message|>", so the model writes only the arguments and <|call|>;
//   - any function (required): "<|channel|>commentary to=functions", so the model writes
//     ".NAME <|constrain|>json<|message|>" itself. The prefix ends where o200k's pre-tokenizer
//     splits anyway ("=functions" | ".NAME"), so its ids are a prefix of the ids the model
//     would write for the whole header: nothing off-distribution is forced.
//
// The call starts at the first generated token: no analysis comes before a forced call.
func (Harmony) ForcedToolCall(name string) string {
	if name == "" {
		return "<|channel|>commentary to=functions"
	}
	return "<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>"
}

// EndOfTurn implements Family: <|end|> closes every message Harmony renders in history.
func (Harmony) EndOfTurn() uint32 { return harmonyEnd }

// CloseTurn implements Family: Harmony renders a finished final answer with <|end|> in history,
// where the model wrote <|return|>; a tool call keeps its <|call|>; a cut generation (max tokens)
// is closed with <|end|>.
func (Harmony) CloseTurn(ids []uint32) []uint32 {
	switch {
	case len(ids) > 0 && ids[len(ids)-1] == harmonyReturn:
		ids[len(ids)-1] = harmonyEnd
	case len(ids) > 0 && (ids[len(ids)-1] == harmonyEnd || ids[len(ids)-1] == harmonyCall):
	default:
		ids = append(ids, harmonyEnd)
	}
	return ids
}

// OpensReasoning implements Family: a Harmony prompt ends with "<|start|>assistant"; the model
// writes its channel itself.
func (Harmony) OpensReasoning(string) bool { return false }

// ReasoningSwitch implements Family: none; reasoning.effort goes into the system message natively
// (low, medium, high).
func (Harmony) ReasoningSwitch() string { return "" }
