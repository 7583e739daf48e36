package prepare_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/internal/synthmodel"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/store"
)

// TestExactRoleOpenedTurns: GLM's template writes no token after an assistant message; the next
// message's role token follows, and the model stops at it (<|observation|> after a tool call,
// <|user|> after an answer). Exact mode's history is what the model generated, its stop token
// included, then the full render's text after that role token — or from it on when the output was
// cut — with the checkpoint and without (the frozen ids rebuilt). The model is the GLM-4.6
// template over a stand-in vocabulary (internal/synthmodel).
func TestExactRoleOpenedTurns(t *testing.T) {
	dir := t.TempDir()
	if err := synthmodel.WriteFamily(dir, "../testdata/models/qwen3/tokenizer.json", "../testdata/render", "glm4/glm-4.6"); err != nil {
		t.Fatal(err)
	}
	m, err := render.LoadModel(os.DirFS(dir), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const call = "<think>I should call get_weather.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
	tests := []struct {
		name, gen string
		cut       bool // the output was cut: no stop token
		next      func(base *convNode) *prepare.Input
		after     string // the role token the new turn starts after (or, cut, at)
	}{
		{name: "tool call then its output", gen: call + "<|observation|>", after: "<|observation|>",
			next: func(b *convNode) *prepare.Input { return continuation(b, "") }},
		{name: "answer then a user message", gen: "<think>Easy.</think>\nIt is sunny.<|user|>", after: "<|user|>",
			next: func(b *convNode) *prepare.Input { return continuation(b, "Thanks.") }},
		{name: "cut answer", gen: "<think>Easy.</think>\nIt is sun", cut: true, after: "<|user|>",
			next: func(b *convNode) *prepare.Input { return continuation(b, "Thanks.") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newArtEnv(t, envOptions{mode: store.ModeExact, model: m, names: family.Names{ToolCallParser: "glm45", ReasoningParser: "glm45"}})
			in := &prepare.Input{Tenant: "t1", Tools: toolsPool[1], Items: []json.RawMessage{userItem("What's the weather in Paris?")}}
			p := env.prepareBoth(t.Context(), in)
			base := env.complete(t, in, p, generation{text: tt.gen})
			env.persist(t.Context(), in, p, base.resp, append([]string{"in_1"}, base.resp.itemIDs...))
			next := tt.next(base)
			full, err := env.full.Prepare(t.Context(), next)
			if err != nil {
				t.Fatal(err)
			}
			at := strings.LastIndex(full.Text, tt.after)
			if !tt.cut {
				at += len(tt.after)
			}
			want := append(append(append([]uint32(nil), p.IDs...), base.resp.generated...), m.Encode(full.Text[at:])...)
			for _, evict := range []bool{false, true} {
				if evict {
					if err := env.tiered.Delete(t.Context(), in.Tenant, base.id); err != nil {
						t.Fatal(err)
					}
				}
				got, err := env.prep.Prepare(t.Context(), next)
				if err != nil {
					t.Fatal(err)
				}
				if got.Reused == 0 {
					t.Errorf("evicted=%v: outcome %s, nothing reused", evict, got.Outcome)
				}
				if d := firstDifference(got.IDs, want); d >= 0 {
					tok := m.Tokenizer()
					t.Errorf("evicted=%v (outcome %s): exact prompt differs at %d\ngot  …%q\nwant …%q", evict, got.Outcome, d,
						tok.Decode(got.IDs[d:]), tok.Decode(want[d:]))
				}
			}
		})
	}
}
