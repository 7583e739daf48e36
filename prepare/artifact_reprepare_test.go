package prepare_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/store"
)

// TestArtifactRepreparation prepares each continuation of a conversation several times from the
// same hot entry, concurrently and then again (client retries; stitch bench's warm repetitions),
// including the turn whose template rewrites the previous prompt's end (a new user query: Qwen3
// drops the reasoning of the agent steps before it), so that the preparations after the first
// share its copied ids and text (internal/arena, render/jinja/output.go): every one equals the
// full render, none changes another's ids or text, and a branch prepared after them still gets
// its own.
func TestArtifactRepreparation(t *testing.T) {
	env := newArtEnv(t, envOptions{mode: store.ModeCanonical, hot: true})
	node := startConversation(t, env, outcomeParams) // ends with a tool call
	steps := []struct{ user, answer string }{
		{"", "<think>\nThe tool said 21.\n</think>\n\nIt is 21 °C in Paris."},     // the tool's output
		{"And in Rome?", "<think>\nNo tool needed.\n</think>\n\nAbout the same."}, // a new query: rewrite
		{"Thanks!", "<think>\nPolite.\n</think>\n\nYou're welcome."},
	}
	for i, step := range steps {
		in := continuation(node, step.user)
		full, err := env.full.Prepare(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		const same = 4
		prompts := make([]*prepare.Prompt, same)
		errs := make([]error, same)
		var wg sync.WaitGroup
		for g := range same {
			wg.Go(func() { prompts[g], errs[g] = env.prep.Prepare(t.Context(), in) })
		}
		wg.Wait()
		for range 2 { // and again, one after the other
			p, err := env.prep.Prepare(t.Context(), in)
			prompts, errs = append(prompts, p), append(errs, err)
		}
		branchIn := continuation(node, fmt.Sprintf("A branch of step %d instead.", i))
		branch, err := env.prep.Prepare(t.Context(), branchIn)
		if err != nil {
			t.Fatal(err)
		}
		branchFull, err := env.full.Prepare(t.Context(), branchIn)
		if err != nil {
			t.Fatal(err)
		}
		if d := firstDifference(branch.IDs, branchFull.IDs); d >= 0 {
			t.Fatalf("step %d: the branch's ids differ from the full render at %d", i, d)
		}
		for k, p := range prompts {
			if errs[k] != nil {
				t.Fatal(errs[k])
			}
			if p.Outcome != prepare.OutcomeHitLocal {
				t.Fatalf("step %d, preparation %d: outcome %s, want hit_local", i, k, p.Outcome)
			}
			if d := firstDifference(p.IDs, full.IDs); d >= 0 || p.Text != full.Text {
				t.Fatalf("step %d, preparation %d: ids differ from the full render at %d (texts equal: %v)", i, k, d, p.Text == full.Text)
			}
		}
		// Nothing prepared later changed an earlier prompt (all checked after the branch).
		wantBranch := slices.Clone(branchFull.IDs)
		node = env.complete(t, in, prompts[0], generation{text: step.answer, stop: true})
		for k, p := range prompts {
			if !slices.Equal(p.IDs, full.IDs) || p.Text != full.Text {
				t.Fatalf("step %d: preparation %d's prompt changed after the others", i, k)
			}
		}
		if !slices.Equal(branch.IDs, wantBranch) || branch.Text != branchFull.Text {
			t.Fatalf("step %d: the branch's prompt changed", i)
		}
	}
}
