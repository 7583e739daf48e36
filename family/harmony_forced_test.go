package family_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/stream"
)

// TestHarmonyForcedToolCall: tool_choice is forced in Harmony's own format on the gpt-oss
// tokenizer. The forced ids are a prefix of the ids of the call header the model writes (so the
// model continues where it would have), and the parser, given the forced ids then the model's
// continuation, yields exactly that call.
func TestHarmonyForcedToolCall(t *testing.T) {
	m, err := render.LoadModel(gzFS{os.DirFS("../testdata/models/gptoss")}, render.Options{ChatTemplate: "x"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := family.New(family.Names{ToolCallParser: "openai", ReasoningParser: "openai_gptoss"}, vocabulary(m))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"get_weather", "Search", "_private", "x1", "run-code", "lookup.v2", "a"} {
		header := "<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>"
		model := m.Encode(header + `{"city":"Paris"}` + "<|call|>")
		for _, forced := range []string{f.ForcedToolCall(""), f.ForcedToolCall(name)} {
			ids := m.Encode(forced)
			if !slices.Equal(model[:min(len(ids), len(model))], ids) {
				t.Errorf("%s: forced %q ids %v are not a prefix of the model's %v", name, forced, ids, model)
				continue
			}
			p := f.NewParser(m.Tokenizer().NewDecodeStream(), family.Turn{ParallelToolCalls: true})
			var pieces []stream.Piece
			for _, id := range model { // the forced ids first, then what the model continues with
				pieces = p.Append(pieces, id)
			}
			pieces = p.Finish(pieces)
			var got strings.Builder
			for _, pc := range pieces {
				switch pc.Kind {
				case stream.PieceToolCall:
					got.WriteString("call " + pc.Text + " ")
				case stream.PieceArguments:
					got.WriteString(pc.Text)
				case stream.PieceToolCallDone:
					got.WriteString(" done")
				}
			}
			if want := "call " + name + ` {"city":"Paris"} done`; got.String() != want {
				t.Errorf("%s: parsed %q, want %q", name, got.String(), want)
			}
		}
	}
	if got := f.ForcedToolCall("get_weather"); got != "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" {
		t.Errorf("ForcedToolCall(get_weather) = %q", got)
	}
}
