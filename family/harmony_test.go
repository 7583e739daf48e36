package family

import (
	"errors"
	"slices"
	"testing"
)

func harmonyVocab(ids map[string]uint32) Vocabulary {
	return Vocabulary{TokenID: func(s string) (uint32, bool) { id, ok := ids[s]; return id, ok }}
}

func TestHarmonyFamily(t *testing.T) {
	good := map[string]uint32{"<|return|>": 200002, "<|end|>": 200007, "<|call|>": 200012}
	f, err := New(Names{ToolCallParser: "openai", ReasoningParser: "openai_gptoss"}, harmonyVocab(good))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.StopTokenIDs(); !slices.Equal(got, []uint32{200002, 200012}) {
		t.Errorf("StopTokenIDs = %v", got)
	}
	if f.EndOfTurn() != 200007 || f.OpensReasoning("<|start|>assistant") || f.ReasoningSwitch() != "" {
		t.Error("EndOfTurn, OpensReasoning or ReasoningSwitch")
	}
	for _, c := range []struct{ in, want []uint32 }{
		{[]uint32{1, 200002}, []uint32{1, 200007}}, // a final answer's <|return|> is <|end|> in history
		{[]uint32{1, 200012}, []uint32{1, 200012}}, // a tool call keeps <|call|>
		{[]uint32{1, 200007}, []uint32{1, 200007}},
		{[]uint32{1, 2}, []uint32{1, 2, 200007}}, // cut by max tokens
		{nil, []uint32{200007}},
	} {
		if got := f.CloseTurn(slices.Clone(c.in)); !slices.Equal(got, c.want) {
			t.Errorf("CloseTurn(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	bad := map[string]uint32{"<|return|>": 1, "<|end|>": 200007, "<|call|>": 200012}
	if _, err := New(Names{ToolCallParser: "openai", ReasoningParser: "openai_gptoss"}, harmonyVocab(bad)); err == nil {
		t.Error("a non-gpt-oss vocabulary was accepted")
	}
	if err := Check(Names{ToolCallParser: "openai"}); !errors.Is(err, ErrUnknown) {
		t.Errorf("openai without openai_gptoss: %v", err)
	}
}
