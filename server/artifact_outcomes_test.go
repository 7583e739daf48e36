package server_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/store"
)

// newTurnText is what the Qwen3 template renders for a turn's new input items after the
// <|im_end|> that closes the previous assistant turn, generation prompt included. It is derived
// from the template, independently of how the preparer finds the split point.
func newTurnText(items []json.RawMessage, kwargs json.RawMessage) string {
	var b strings.Builder
	inTools := false
	for _, raw := range items {
		it := gjson.ParseBytes(raw)
		if it.Get("type").Str == "function_call_output" {
			if !inTools {
				b.WriteString("\n<|im_start|>user")
				inTools = true
			}
			b.WriteString("\n<tool_response>\n" + it.Get("output").Str + "\n</tool_response>")
			continue
		}
		if inTools {
			b.WriteString("<|im_end|>")
			inTools = false
		}
		content := it.Get("content")
		text := content.Str
		if content.IsArray() {
			text = content.Get("0.text").Str
		}
		b.WriteString("\n<|im_start|>user\n" + text + "<|im_end|>")
	}
	if inTools {
		b.WriteString("<|im_end|>")
	}
	b.WriteString("\n<|im_start|>assistant\n")
	if strings.Contains(string(kwargs), "false") {
		b.WriteString("<think>\n\n</think>\n\n")
	}
	return b.String()
}

// closed appends <|im_end|> unless ids already end with it (a generation cut by max_tokens).
func closed(ids []uint32) []uint32 {
	if len(ids) == 0 || ids[len(ids)-1] != imEnd {
		ids = append(ids, imEnd)
	}
	return ids
}

// TestArtifactPropertyExact runs random conversations in exact mode: every continuation's prompt
// is the previous prompt ++ the previous generated ids (closed with <|im_end|>) ++ the new turn
// tokenized alone, and a lost artifact is rebuilt from the checkpoints to the identical ids.
func TestArtifactPropertyExact(t *testing.T) {
	turns := 2000
	if raceEnabled {
		turns = 300
	}
	if testing.Short() {
		turns = 200
	}
	ctx := t.Context()
	env := newArtEnv(t, envOptions{mode: store.ModeExact})
	r := rand.New(rand.NewPCG(6, 2))
	outcomes := map[string]int{}
	rebuilt := 0
	var nodes []*convNode
	var sp sessionParams
	sessionLen := 0
	for turn := 0; turn < turns; turn++ {
		if sessionLen == 0 {
			nodes = nil
			sessionLen = 10 + r.IntN(31)
			sp = sessionParams{tenant: pick(r, []string{"t1", "t2"}), instructions: pick(r, instructionsPool),
				tools: pick(r, toolsPool), kwargs: pick(r, kwargsPool)}
		}
		sessionLen--
		base, items := nextInput(r, nodes, sp)
		if base != nil {
			// A changed fingerprint stops the artifact (invalid) but not the frozen history, rebuilt
			// from the checkpoints; changed instructions or tools may add or remove a system block.
			switch r.IntN(20) {
			case 0:
				sp.kwargs = pick(r, kwargsPool)
			case 1:
				sp.instructions = pick(r, instructionsPool)
			case 2:
				sp.tools = pick(r, toolsPool)
			}
		}
		in := &server.PrepareInput{Tenant: sp.tenant, Items: items, Instructions: sp.instructions, Tools: sp.tools, Kwargs: sp.kwargs}
		var want []uint32
		if base != nil {
			in.PreviousID = base.id
			if r.IntN(12) == 0 {
				if err := env.tiered.Delete(ctx, sp.tenant, base.id); err != nil {
					t.Fatal(err)
				}
			}
			full, err := env.full.Prepare(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			nt := newTurnText(items[len(base.items):], sp.kwargs)
			if !strings.HasSuffix(full.Text, nt) {
				t.Fatalf("turn %d: the render does not end with the new turn %q:\n%q", turn, nt, tail(full.Text, 400))
			}
			want = append(closed(append(append([]uint32(nil), base.p.IDs...), base.resp.generated...)), env.model.Encode(nt)...)
		}
		p, err := env.prep.Prepare(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		outcomes[p.Outcome]++
		if base == nil {
			full, err := env.full.Prepare(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			want = full.IDs
		}
		if d := firstDifference(p.IDs, want); d >= 0 {
			tok := env.model.Tokenizer()
			t.Fatalf("turn %d (outcome %s): exact prompt differs at %d of %d/%d\ngot  %q\nwant %q", turn, p.Outcome, d, len(p.IDs), len(want),
				tok.Decode(p.IDs[d:]), tok.Decode(want[d:]))
		}
		if base != nil && p.Outcome != server.OutcomeMiss && r.IntN(6) == 0 {
			// Lose the artifact now: the rebuild from the checkpoints must give the same ids.
			if err := env.tiered.Delete(ctx, sp.tenant, base.id); err != nil {
				t.Fatal(err)
			}
			again, err := env.prep.Prepare(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if again.Outcome != server.OutcomeMiss {
				t.Fatalf("turn %d: outcome after deleting the artifact %s, want miss", turn, again.Outcome)
			}
			if d := firstDifference(again.IDs, p.IDs); d >= 0 {
				t.Fatalf("turn %d: rebuilt exact prompt differs at %d of %d/%d", turn, d, len(again.IDs), len(p.IDs))
			}
			rebuilt++
		}
		resp := env.respond(p, inventGeneration(r, p, sp.tools, sp.thinking()))
		var convIDs []string
		if base != nil {
			convIDs = append(convIDs, base.convIDs...)
		}
		for range len(in.Items) - len(convIDs) {
			convIDs = append(convIDs, env.newID("in"))
		}
		convIDs = append(convIDs, resp.itemIDs...)
		env.persist(ctx, in, p, resp, convIDs)
		env.prep.Commit(ctx, sp.tenant, resp.id, p, resp.conv)
		nodes = append(nodes, &convNode{id: resp.id, items: append(in.Items[:len(in.Items):len(in.Items)], resp.items...),
			calls: resp.calls, in: in, p: p, resp: resp, convIDs: convIDs})
	}
	t.Logf("%d exact turns, outcomes %v, %d rebuilt after deleting the artifact", turns, outcomes, rebuilt)
	if outcomes[server.OutcomeDiverged] != 0 {
		t.Errorf("%d diverged exact turns, want 0", outcomes[server.OutcomeDiverged])
	}
}
