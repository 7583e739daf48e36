package prepare_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
)

// Artifact chains through the engine (store/chain.go): a turn's artifact is stored as what it
// added to the previous one; a missing or expired link falls back to a full render with the same
// ids, branches from old turns and turns across snapshot boundaries hit, and no link crosses
// tenants. Each env shares a real Redis as L2; the hot cache is off (or forgotten) where the
// stored chain must be read.

// chainTurn continues base with a user message, requires the outcome want ("" for any) and the
// ids of the mode (canonical: the full render's; exact: base's prompt and generated ids, closed,
// then the new turn), and completes the turn.
func chainTurn(t *testing.T, env *artEnv, base *convNode, turn int, want prepare.Outcome) *convNode {
	t.Helper()
	in := continuation(base, fmt.Sprintf("Turn %d: and what about city number %d? ✓", turn, turn))
	var p *prepare.Prompt
	if env.opts.mode == store.ModeCanonical {
		p = env.prepareBoth(t.Context(), in)
	} else {
		var err error
		if p, err = env.prep.Prepare(t.Context(), in); err != nil {
			t.Fatal(err)
		}
		frozen := append(closed(append(append([]uint32(nil), base.p.IDs...), base.resp.generated...)), env.model.Encode(newTurnText(in.Items[len(base.items):], nil))...)
		if d := firstDifference(p.IDs, frozen); d >= 0 {
			t.Fatalf("turn %d (outcome %s): exact prompt differs at %d of %d/%d", turn, p.Outcome, d, len(p.IDs), len(frozen))
		}
	}
	if want != "" && p.Outcome != want {
		t.Fatalf("turn %d: outcome %s (reused %d), want %s", turn, p.Outcome, p.Reused, want)
	}
	return env.complete(t, in, p, generation{text: fmt.Sprintf("<think>\nTurn %d.\n</think>\n\nIt is %d °C there.", turn, turn), stop: true})
}

func newRedisL2(t *testing.T) store.PortableCache {
	t.Helper()
	rc := store.NewRedisClient(store.RedisOptions{Addrs: []string{redistest.Start(t)}})
	t.Cleanup(func() { rc.Close() })
	return store.NewRedisArtifacts(rc, store.RedisArtifactsOptions{Prefix: "chaintest"})
}

// TestArtifactChain covers the chain cases end to end in canonical and exact mode.
func TestArtifactChain(t *testing.T) {
	for _, mode := range []store.Mode{store.ModeCanonical, store.ModeExact} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Run("snapshot boundary", func(t *testing.T) {
				// 20 turns cross two snapshots (8 links at most); every turn reads the chain
				// from L1 (no hot cache), and a second pod reads it from Redis.
				l2 := newRedisL2(t)
				env := newArtEnv(t, envOptions{mode: mode, l2: l2})
				podB := newArtEnv(t, envOptions{mode: mode, l2: l2, sealer: env.sealer, clock: env.clock})
				node := startConversation(t, env, outcomeParams)
				env.persistNode(t, node)
				for turn := 1; turn <= 20; turn++ {
					node = chainTurn(t, env, node, turn, prepare.OutcomeHitLocal)
					env.persistNode(t, node)
				}
				if st := env.tiered.Stats(); st.Rebased == 0 {
					t.Errorf("20 turns and no snapshot re-based its chain: %+v", st)
				}
				podB.cps = env.cps
				chainTurn(t, podB, node, 21, prepare.OutcomeHitPortable)
			})
			t.Run("missing middle link", func(t *testing.T) {
				env := newArtEnv(t, envOptions{mode: mode, l2: newRedisL2(t), hot: true})
				nodes := []*convNode{startConversation(t, env, outcomeParams)}
				env.persistNode(t, nodes[0])
				for turn := 1; turn <= 5; turn++ {
					nodes = append(nodes, chainTurn(t, env, nodes[turn-1], turn, prepare.OutcomeHitLocal))
					env.persistNode(t, nodes[turn])
				}
				if err := env.tiered.Delete(t.Context(), outcomeParams.tenant, nodes[2].id); err != nil {
					t.Fatal(err)
				}
				env.hot.Forget(outcomeParams.tenant, nodes[5].id)
				next := chainTurn(t, env, nodes[5], 6, prepare.OutcomeMiss)
				env.persistNode(t, next)
				chainTurn(t, env, next, 7, prepare.OutcomeHitLocal)     // the fallback wrote a fresh snapshot
				chainTurn(t, env, nodes[1], 8, prepare.OutcomeHitLocal) // below the missing link
			})
			t.Run("expired parent", func(t *testing.T) {
				env := newArtEnv(t, envOptions{mode: mode, l2: newRedisL2(t), ttl: time.Hour})
				node := startConversation(t, env, outcomeParams)
				env.persistNode(t, node)
				env.clock.Advance(20 * time.Minute)
				node = chainTurn(t, env, node, 1, prepare.OutcomeHitLocal) // a link expiring with its base
				env.persistNode(t, node)
				env.clock.Advance(41 * time.Minute) // past the first turn's hour: the link expired with it
				next := chainTurn(t, env, node, 2, prepare.OutcomeExpired)
				env.persistNode(t, next)
				chainTurn(t, env, next, 3, prepare.OutcomeHitLocal)
			})
			t.Run("branch from an old turn", func(t *testing.T) {
				env := newArtEnv(t, envOptions{mode: mode, l2: newRedisL2(t), hot: true})
				nodes := []*convNode{startConversation(t, env, outcomeParams)}
				env.persistNode(t, nodes[0])
				for turn := 1; turn <= 12; turn++ { // past a snapshot that re-based turn 2
					nodes = append(nodes, chainTurn(t, env, nodes[turn-1], turn, prepare.OutcomeHitLocal))
					env.persistNode(t, nodes[turn])
				}
				branch := nodes[2]
				for turn := 13; turn <= 24; turn++ { // the branch passes its own snapshot
					branch = chainTurn(t, env, branch, turn, prepare.OutcomeHitLocal)
					env.persistNode(t, branch)
				}
				for _, i := range []int{3, 7, 12} {
					env.hot.Forget(outcomeParams.tenant, nodes[i].id)
					chainTurn(t, env, nodes[i], 30+i, prepare.OutcomeHitLocal)
				}
			})
			t.Run("cross-tenant parent", func(t *testing.T) {
				env := newArtEnv(t, envOptions{mode: mode, l2: newRedisL2(t)})
				node := startConversation(t, env, outcomeParams)
				env.persistNode(t, node)
				node = chainTurn(t, env, node, 1, prepare.OutcomeHitLocal)
				env.persistNode(t, node)
				in := continuation(node, "Another tenant names this response.")
				in.Tenant = "t2"
				// Exact mode finds no checkpoint of t2's either: the full render is all there is.
				if p := env.prepareBoth(t.Context(), in); p.Outcome != prepare.OutcomeMiss || p.Reused != 0 {
					t.Errorf("another tenant's response: outcome %s reused %d, want miss", p.Outcome, p.Reused)
				}
			})
		})
	}
}

// persistNode stores n's checkpoint (exact mode reads it back), its conversation being its items
// with made-up ids.
func (e *artEnv) persistNode(t *testing.T, n *convNode) {
	t.Helper()
	conv := make([]string, len(n.items))
	for i := range conv {
		conv[i] = fmt.Sprintf("item_%s_%d", n.id, i)
	}
	copy(conv[len(conv)-len(n.resp.itemIDs):], n.resp.itemIDs)
	e.persist(t.Context(), n.in, n.p, n.resp, conv)
}
