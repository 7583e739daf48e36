package prepare_test

import (
	"testing"
	"unsafe"

	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/store"
)

// TestArtifactJSONAppendsInPlace: a canonical continuation from the hot cache appends its new
// ids' JSON after the previous turn's, in the arena they share, while it is prepared: its request
// sends the whole prompt's JSON as it is (PromptPrefix covers every id, and prepareBoth checks
// the request's bytes), and the next turn's prefix is those same bytes.
func TestArtifactJSONAppendsInPlace(t *testing.T) {
	env := newArtEnv(t, envOptions{mode: store.ModeCanonical, hot: true})
	node := startConversation(t, env, outcomeParams)
	whole, shared := 0, 0
	var prev []byte
	const turns = 8
	for turn := 1; turn <= turns; turn++ {
		node = chainTurn(t, env, node, turn, prepare.OutcomeHitLocal)
		p := node.p
		if p.PromptPrefixIDs == len(p.IDs) {
			whole++
		}
		if prev != nil && len(p.PromptPrefix) > 0 && unsafe.SliceData(p.PromptPrefix) == unsafe.SliceData(prev) {
			shared++
		}
		prev = p.PromptPrefix
	}
	if whole < turns-1 || shared < turns-2 {
		t.Errorf("of %d continuations, %d sent their whole prompt's JSON as prepared and %d shared the previous turn's", turns, whole, shared)
	}
}
