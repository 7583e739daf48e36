package prepare_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
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

// TestArtifactFingerprintMemo: a hot continuation takes the previous turn's fingerprint when its
// engine, tenant, kwargs, instructions and tools are the previous turn's, and computes it
// otherwise; either way it equals the fingerprint an engine without a hot cache computes, turn
// after turn of a conversation whose parameters and engine change at random.
func TestArtifactFingerprintMemo(t *testing.T) {
	env := newArtEnv(t, envOptions{mode: store.ModeCanonical, hot: true})
	plain := newArtEnv(t, envOptions{mode: store.ModeCanonical})
	// Engines sharing env's hot cache, each with its reference without one: another served model,
	// a twin of env's engine (its memo is taken after comparing identity and salt), and a twin
	// whose salt differs.
	engine := func(served string, salt func(string) string, hot bool) *prepare.ArtifactEngine {
		o := prepare.ArtifactOptions{
			Model: env.model, Family: env.fam, Store: plain.tiered, Mode: store.ModeCanonical,
			Identity: render.Fingerprint{ServedModel: served}, CacheSalt: salt,
			Now: env.clock.Now, Metrics: prepare.NewArtifactMetrics(prometheus.NewRegistry()),
		}
		if hot {
			o.Store, o.Hot, o.Items = env.tiered, env.hot, render.NewItemCache(1<<20)
		}
		return prepare.NewArtifactEngine(o)
	}
	sameSalt := func(tenant string) string { return "salt-" + tenant }
	otherSalt := func(tenant string) string { return "pepper-" + tenant }
	engines := [][2]*prepare.ArtifactEngine{
		{engine("other", sameSalt, true), engine("other", sameSalt, false)},
		{engine("qwen3", sameSalt, true), engine("qwen3", sameSalt, false)},
		{engine("qwen3", otherSalt, true), engine("qwen3", otherSalt, false)},
		{engine("qwen3", nil, true), engine("qwen3", nil, false)},
	}
	r := rand.New(rand.NewPCG(32, 7))
	node := startConversation(t, env, outcomeParams)
	for turn := 1; turn <= 40; turn++ {
		in := continuation(node, fmt.Sprintf("Turn %d: and city number %d?", turn, turn))
		switch r.IntN(5) {
		case 0:
			in.Kwargs = pick(r, kwargsPool)
		case 1:
			in.Instructions = pick(r, instructionsPool)
		case 2:
			in.Tools = pick(r, toolsPool)
		}
		eng, ref := env.prep, plain.prep
		if k := r.IntN(2 * len(engines)); k < len(engines) {
			eng, ref = engines[k][0], engines[k][1]
		}
		p, err := eng.Prepare(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Prepare(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		if p.Fingerprint() != want.Fingerprint() {
			t.Fatalf("turn %d: fingerprint %x, want %x (outcome %s)", turn, p.Fingerprint(), want.Fingerprint(), p.Outcome)
		}
		node = env.complete(t, in, p, generation{text: fmt.Sprintf("<think>\nTurn %d.\n</think>\n\nIt is %d °C there.", turn, turn), stop: true})
	}
}
