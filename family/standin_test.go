package family_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/internal/synthmodel"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/stream"
)

func standIn(t *testing.T, name string) *render.Renderer {
	t.Helper()
	dir := t.TempDir()
	if err := synthmodel.WriteFamily(dir, "../testdata/models/qwen3/tokenizer.json", "../testdata/render", name); err != nil {
		t.Fatal(err)
	}
	m, err := render.LoadModel(os.DirFS(dir), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGLMTurnsOpenedByRole: GLM's template writes no token after an assistant message, so the
// family appends none (CloseTurn) and names its role tokens for exact mode's split.
func TestGLMTurnsOpenedByRole(t *testing.T) {
	m := standIn(t, "glm4/glm-4.6")
	for _, tool := range []string{"glm45", "glm47"} {
		f, err := family.New(family.Names{ToolCallParser: tool, ReasoningParser: "glm45"}, vocabulary(m))
		if err != nil {
			t.Fatal(err)
		}
		ro, ok := f.(family.RoleOpened)
		if !ok || len(ro.RoleTokens()) != 4 {
			t.Fatalf("%s: not RoleOpened with 4 role tokens", tool)
		}
		obs, _ := m.Tokenizer().TokenID("<|observation|>")
		for _, ids := range [][]uint32{{1, 2}, {1, obs}} {
			if got := f.CloseTurn(slices.Clone(ids)); !slices.Equal(got, ids) {
				t.Errorf("%s: CloseTurn(%v) = %v, want it unchanged", tool, ids, got)
			}
		}
	}
	q, err := family.New(family.Names{ToolCallParser: "hermes"}, vocabulary(standIn(t, "glm4/glm-4.6")))
	if err != nil {
		t.Fatal(err)
	}
	if ro, ok := q.(family.RoleOpened); ok && len(ro.RoleTokens()) > 0 {
		t.Error("hermes has role tokens")
	}
}

// TestKimiThinkingSwitch: vLLM's kimi_k2 reasoning parser reads chat_template_kwargs thinking
// (default true): off, the output is all message text.
func TestKimiThinkingSwitch(t *testing.T) {
	m := standIn(t, "kimi_k2/kimi-k2-thinking")
	f, err := family.New(family.Names{ToolCallParser: "kimi_k2", ReasoningParser: "kimi_k2"}, vocabulary(m))
	if err != nil {
		t.Fatal(err)
	}
	if f.ReasoningSwitch() != "thinking" {
		t.Errorf("ReasoningSwitch = %q, want thinking", f.ReasoningSwitch())
	}
	ids := append(m.Encode("<think>plan</think>Hi."), m.StopTokenIDs[0])
	for _, off := range []bool{false, true} {
		p := f.NewParser(m.Tokenizer().NewDecodeStream(), family.Turn{ReasoningOff: off})
		var pieces []stream.Piece
		for _, id := range ids {
			pieces = p.Append(pieces, id)
		}
		pieces = p.Finish(pieces)
		var reasoning, text strings.Builder
		for _, pc := range pieces {
			switch pc.Kind {
			case stream.PieceReasoning:
				reasoning.WriteString(pc.Text)
			case stream.PieceText:
				text.WriteString(pc.Text)
			}
		}
		wantR, wantT := "plan", "Hi."
		if off {
			wantR, wantT = "", "<think>plan</think>Hi."
		}
		if reasoning.String() != wantR || text.String() != wantT {
			t.Errorf("off=%v: reasoning %q text %q, want %q %q", off, reasoning.String(), text.String(), wantR, wantT)
		}
	}
}
