package family_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/stream"
)

// TestSpecFamilies runs each stream.NewFamilyParser family on the real tokenizer of a stored model
// directory: end of turn, stop ids, forced-call text, reasoning, and a generated turn with two
// parallel calls through NewParser.
func TestSpecFamilies(t *testing.T) {
	for _, tt := range []struct {
		model     string
		names     family.Names
		end       string // EndOfTurn's token
		forced    string // ForcedToolCall("")
		named     string // ForcedToolCall("f")
		sw        string // ReasoningSwitch
		reasoning string // generated reasoning before the text ("" none)
		open      string // a prompt OpensReasoning accepts ("" none)
		output    string // generated text: "Hi." then calls f {"x": 1} and g {"y": "a"}
	}{
		{model: "qwen2_5", names: family.Names{ToolCallParser: "hermes"}, end: "<|im_end|>",
			forced: "<tool_call>\n{\"name\": \"", named: "<tool_call>\n{\"name\": \"f\", \"arguments\": ",
			output: "Hi.<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {\"y\": \"a\"}}\n</tool_call>"},
		{model: "qwen3", names: family.Names{ToolCallParser: "qwen3_coder", ReasoningParser: "qwen3"}, end: "<|im_end|>",
			forced: "<tool_call>\n<function=", named: "<tool_call>\n<function=f>\n", sw: "enable_thinking",
			reasoning: "plan", open: "<|im_start|>assistant\n<think>\n",
			output: "<think>\nplan</think>\n\nHi.<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=g>\n<parameter=y>\na\n</parameter>\n</function>\n</tool_call>"},
		{model: "llama3_1", names: family.Names{ToolCallParser: "llama3_json"}, end: "<|eot_id|>",
			forced: "{\"name\": \"", named: "{\"name\": \"f\", \"parameters\": ",
			output: "{\"name\": \"f\", \"parameters\": {\"x\": 1}}; {\"name\": \"g\", \"parameters\": {\"y\": \"a\"}}"},
		{model: "llama3_2", names: family.Names{ToolCallParser: "pythonic"}, end: "<|eot_id|>",
			forced: "[", named: "[f(",
			output: "[f(x=1), g(y=\"a\")]"},
		{model: "gemma3", names: family.Names{ToolCallParser: "pythonic"}, end: "<end_of_turn>",
			forced: "[", named: "[f(",
			output: "[f(x=1), g(y=\"a\")]"},
		{model: "mistral_nemo", names: family.Names{ToolCallParser: "mistral"}, end: "</s>",
			forced: "[TOOL_CALLS][{\"name\": \"", named: "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": ",
			output: "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": 1}, \"id\": \"abcdefghi\"}, {\"name\": \"g\", \"arguments\": {\"y\": \"a\"}, \"id\": \"bcdefghij\"}]"},
		// DeepSeek V3's tokenizer has no <think> token (R1-0528's and V3.1's do): no reasoning here.
		{model: "deepseek_v3", names: family.Names{ToolCallParser: "deepseek_v3"}, end: "<｜end▁of▁sentence｜>",
			forced: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>",
			named:  "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n",
			output: "Hi.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{\"x\": 1}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>g\n```json\n{\"y\": \"a\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
		{model: "deepseek_v3", names: family.Names{ToolCallParser: "deepseek_v31"}, end: "<｜end▁of▁sentence｜>",
			forced: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>",
			named:  "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>",
			output: "Hi.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"x\": 1}<｜tool▁call▁end｜><｜tool▁call▁begin｜>g<｜tool▁sep｜>{\"y\": \"a\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
	} {
		t.Run(tt.model+"/"+tt.names.ToolCallParser+"+"+tt.names.ReasoningParser, func(t *testing.T) {
			m, err := render.LoadModel(gzFS{os.DirFS("../testdata/models/" + tt.model)}, render.Options{})
			if err != nil {
				t.Skipf("model %s: %v", tt.model, err)
			}
			f, err := family.New(tt.names, vocabulary(m))
			if err != nil {
				t.Fatal(err)
			}
			end, ok := m.Tokenizer().TokenID(tt.end)
			if !ok {
				t.Fatalf("vocabulary lacks %q", tt.end)
			}
			if f.EndOfTurn() != end {
				t.Errorf("EndOfTurn = %d, want %q %d", f.EndOfTurn(), tt.end, end)
			}
			if !slices.Equal(f.StopTokenIDs(), m.StopTokenIDs) {
				t.Errorf("StopTokenIDs = %v, want %v", f.StopTokenIDs(), m.StopTokenIDs)
			}
			if got := f.CloseTurn([]uint32{end + 1}); !slices.Equal(got, []uint32{end + 1, end}) {
				t.Errorf("CloseTurn(cut) = %v", got)
			}
			if got := f.CloseTurn([]uint32{1, end}); !slices.Equal(got, []uint32{1, end}) {
				t.Errorf("CloseTurn(closed) = %v", got)
			}
			if got := f.ForcedToolCall(""); got != tt.forced {
				t.Errorf("ForcedToolCall(\"\") = %q, want %q", got, tt.forced)
			}
			if got := f.ForcedToolCall("f"); got != tt.named {
				t.Errorf("ForcedToolCall(f) = %q, want %q", got, tt.named)
			}
			if got := f.ReasoningSwitch(); got != tt.sw {
				t.Errorf("ReasoningSwitch = %q, want %q", got, tt.sw)
			}
			if f.OpensReasoning("hello") {
				t.Error("OpensReasoning(hello) = true")
			}
			if tt.open != "" && !f.OpensReasoning(tt.open) {
				t.Errorf("OpensReasoning(%q) = false", tt.open)
			}
			// A call the model wrote no id for: an id the family's templates accept.
			id := "call_0123"
			if minter, ok := f.(family.CallIDMinter); ok {
				id = minter.NewCallID(func(p string) string { return p + "_seq1" })
			}
			if tt.names.ToolCallParser == "mistral" {
				if len(id) != 9 || strings.IndexFunc(id, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') }) >= 0 {
					t.Errorf("Mistral call id %q: Mistral's templates accept 9 alphanumeric characters only", id)
				}
			} else if !strings.HasPrefix(id, "call_") {
				t.Errorf("call id %q, want call_<random>", id)
			}
			ids := append(m.Encode(tt.output), m.StopTokenIDs[0])
			p := f.NewParser(m.Tokenizer().NewDecodeStream(), family.Turn{ReasoningOpen: tt.open != "", ParallelToolCalls: true})
			var pieces []stream.Piece
			for _, id := range ids {
				pieces = p.Append(pieces, id)
			}
			pieces = p.Finish(pieces)
			var reasoning, args strings.Builder
			var names []string
			for _, pc := range pieces {
				switch pc.Kind {
				case stream.PieceReasoning:
					reasoning.WriteString(pc.Text)
				case stream.PieceToolCall:
					names = append(names, pc.Text)
				case stream.PieceArguments:
					args.WriteString(pc.Text + "|")
				}
			}
			if got := strings.TrimSpace(reasoning.String()); got != tt.reasoning {
				t.Errorf("reasoning %q, want %q", got, tt.reasoning)
			}
			if !slices.Equal(names, []string{"f", "g"}) {
				t.Errorf("calls %v, want [f g]", names)
			}
			if fp, ok := p.(interface{ Malformed() bool }); ok && fp.Malformed() {
				t.Error("Malformed() = true")
			}
			t.Logf("arguments %s", args.String())
		})
	}
}

// gzFS serves tokenizer.json from tokenizer.json.gz (testdata/models stores most compressed).
type gzFS struct{ fs.FS }

func (g gzFS) ReadFile(name string) ([]byte, error) {
	data, err := fs.ReadFile(g.FS, name)
	if name != "tokenizer.json" || !errors.Is(err, fs.ErrNotExist) {
		return data, err
	}
	gz, gerr := fs.ReadFile(g.FS, "tokenizer.json.gz")
	if gerr != nil {
		return nil, err
	}
	zr, gerr := gzip.NewReader(bytes.NewReader(gz))
	if gerr != nil {
		return nil, gerr
	}
	defer zr.Close()
	return io.ReadAll(zr)
}
