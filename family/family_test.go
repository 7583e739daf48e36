package family_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/stream"
)

var (
	qwen3Once  sync.Once
	qwen3Model *render.Renderer
	qwen3Err   error
)

func loadQwen3(t *testing.T) *render.Renderer {
	t.Helper()
	qwen3Once.Do(func() {
		qwen3Model, qwen3Err = render.LoadModel(os.DirFS("../testdata/models/qwen3"), render.Options{})
	})
	if qwen3Err != nil {
		t.Fatal(qwen3Err)
	}
	return qwen3Model
}

func vocabulary(m *render.Renderer) family.Vocabulary {
	return family.Vocabulary{TokenID: m.Tokenizer().TokenID, StopTokenIDs: m.StopTokenIDs}
}

func TestLookup(t *testing.T) {
	for _, tt := range []struct {
		names family.Names
		ok    bool
	}{
		{family.Names{ToolCallParser: "hermes", ReasoningParser: "qwen3"}, true},
		{family.Names{ToolCallParser: "hermes"}, true}, // Qwen2.5
		{family.Names{ToolCallParser: "hermes", ReasoningParser: "deepseek_r1"}, false},
		{family.Names{ToolCallParser: "mistral", ReasoningParser: "qwen3"}, false},
		{family.Names{ToolCallParser: "Hermes", ReasoningParser: "qwen3"}, false}, // spelled as vLLM spells it
	} {
		err := family.Check(tt.names)
		if (err == nil) != tt.ok {
			t.Errorf("Check(%v) = %v, want ok=%v", tt.names, err, tt.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, family.ErrUnknown) || !strings.Contains(err.Error(), "hermes+qwen3") {
				t.Errorf("Check(%v) = %q: want ErrUnknown listing the supported names", tt.names, err)
			}
			if _, err := family.New(tt.names, family.Vocabulary{}); !errors.Is(err, family.ErrUnknown) {
				t.Errorf("New(%v) = %v, want ErrUnknown", tt.names, err)
			}
		}
	}
	if got := family.Supported(); len(got) == 0 || got[0] != (family.Names{ToolCallParser: "hermes", ReasoningParser: "qwen3"}) {
		t.Errorf("Supported() = %v", got)
	}
}

func TestQwen3(t *testing.T) {
	m := loadQwen3(t)
	f, err := family.New(family.Names{ToolCallParser: "hermes", ReasoningParser: "qwen3"}, vocabulary(m))
	if err != nil {
		t.Fatal(err)
	}
	imEnd, _ := m.Tokenizer().TokenID("<|im_end|>")
	if f.EndOfTurn() != imEnd {
		t.Errorf("EndOfTurn = %d, want <|im_end|> %d", f.EndOfTurn(), imEnd)
	}
	if got := f.ReasoningSwitch(); got != "enable_thinking" {
		t.Errorf("ReasoningSwitch = %q", got)
	}
	if !slices.Equal(f.StopTokenIDs(), m.StopTokenIDs) {
		t.Errorf("StopTokenIDs = %v, want %v", f.StopTokenIDs(), m.StopTokenIDs)
	}
	if got := f.CloseTurn([]uint32{1, 2}); !slices.Equal(got, []uint32{1, 2, imEnd}) {
		t.Errorf("CloseTurn(cut) = %v", got)
	}
	if got := f.CloseTurn([]uint32{1, imEnd}); !slices.Equal(got, []uint32{1, imEnd}) {
		t.Errorf("CloseTurn(closed) = %v", got)
	}
	if got := f.CloseTurn(nil); !slices.Equal(got, []uint32{imEnd}) {
		t.Errorf("CloseTurn(nil) = %v", got)
	}
	for _, tt := range []struct{ name, want string }{
		{"", "<tool_call>\n"},
		{"get_weather", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "},
		{`a"b`, "<tool_call>\n{\"name\": \"a\\\"b\", \"arguments\": "},
	} {
		if got := f.ForcedToolCall(tt.name); got != tt.want {
			t.Errorf("ForcedToolCall(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	for _, tt := range []struct {
		prompt string
		want   bool
	}{
		{"<|im_start|>assistant\n<think>\n", true},
		{"<|im_start|>assistant\n<think>", true},
		{"<|im_start|>assistant\n<think>\n\n</think>\n\n", false},
		{"<|im_start|>assistant\n", false},
		{"<think>\nplan</think>\n<|im_start|>assistant\n", false},
		{"<think>x", false},
		{"", false},
		{"<think> \u00a0\n", true}, // Unicode white space, as strings.TrimSpace sees it
	} {
		if got := f.OpensReasoning(tt.prompt); got != tt.want {
			t.Errorf("OpensReasoning(%q) = %v, want %v", tt.prompt, got, tt.want)
		}
	}

	// A generated turn through the family's parser: reasoning, text, a forced call's ids included.
	out := m.Encode("plan</think>\n\nCalling.<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>")
	out = append(out, imEnd)
	p := f.NewParser(m.Tokenizer().NewDecodeStream(), family.Turn{ReasoningOpen: true, ParallelToolCalls: true})
	var pieces []stream.Piece
	for _, id := range out {
		pieces = p.Append(pieces, id)
	}
	if !p.Ended() {
		t.Fatal("parser did not end at <|im_end|>")
	}
	var kinds []string
	var args string
	for _, pc := range pieces {
		kinds = append(kinds, pc.Kind.String())
		if pc.Kind == stream.PieceArguments {
			args += pc.Text
		}
	}
	want := []string{"reasoning", "reasoning_done", "text", "text_done", "tool_call", "arguments", "tool_call_done"}
	if got := slices.Compact(kinds); !slices.Equal(got, want) {
		t.Errorf("pieces %v, want %v", got, want)
	}
	if args != `{"x": 1}` {
		t.Errorf("arguments %q", args)
	}
}
