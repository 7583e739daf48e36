package prepare_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
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
	env := newArtEnv(t, envOptions{mode: store.ModeExact, hot: true, hotBytes: 2 << 20})
	r := rand.New(rand.NewPCG(6, 2))
	outcomes := map[prepare.Outcome]int{}
	rebuilt, prefixed := 0, 0
	var nodes []*convNode
	var sp sessionParams
	sessionLen := 0
	for turn := 0; turn < turns; turn++ {
		if sessionLen == 0 {
			nodes = nil
			sp, sessionLen = newSession(r)
		}
		sessionLen--
		base, items := nextInput(r, nodes, sp)
		if base != nil {
			// A changed fingerprint (kwargs, instructions, tools) must reach the model: the turn
			// starts a new exact chain from a full render instead of the frozen history.
			switch r.IntN(20) {
			case 0:
				sp.kwargs = pick(r, kwargsPool)
			case 1:
				sp.instructions = pick(r, instructionsPool)
			case 2:
				sp.tools = pick(r, toolsPool)
			}
		}
		in := &prepare.Input{Tenant: sp.tenant, Items: items, Instructions: sp.instructions, Tools: sp.tools, Kwargs: sp.kwargs}
		var want, fullIDs []uint32
		if base != nil {
			in.PreviousID = base.id
			if r.IntN(12) == 0 {
				if err := env.tiered.Delete(ctx, sp.tenant, base.id); err != nil {
					t.Fatal(err)
				}
			}
			if r.IntN(4) == 0 {
				env.hot.Forget(sp.tenant, base.id) // the digest path, or a rebuild
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
			fullIDs = full.IDs
		}
		p, err := env.prep.Prepare(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if base != nil && p.Fingerprint() != base.p.Fingerprint() {
			want = fullIDs
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
		if base != nil && p.Outcome != prepare.OutcomeMiss && r.IntN(6) == 0 {
			// Lose the artifact now: the rebuild from the checkpoints must give the same ids.
			if err := env.tiered.Delete(ctx, sp.tenant, base.id); err != nil {
				t.Fatal(err)
			}
			env.hot.Forget(sp.tenant, base.id)
			again, err := env.prep.Prepare(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if again.Outcome != prepare.OutcomeMiss {
				t.Fatalf("turn %d: outcome after deleting the artifact %s, want miss", turn, again.Outcome)
			}
			if d := firstDifference(again.IDs, p.IDs); d >= 0 {
				t.Fatalf("turn %d: rebuilt exact prompt differs at %d of %d/%d", turn, d, len(again.IDs), len(p.IDs))
			}
			rebuilt++
		}
		if p.PromptPrefix != nil {
			if !prefixEncodesIDs(p) {
				t.Fatalf("turn %d: PromptPrefix does not encode the ids", turn)
			}
			prefixed++
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
		p.Commit(ctx, resp.id, resp.conv)
		nodes = append(nodes, &convNode{id: resp.id, items: append(in.Items[:len(in.Items):len(in.Items)], resp.items...),
			calls: resp.calls, in: in, p: p, resp: resp, convIDs: convIDs})
	}
	hot := env.metric("stitch_artifact_hot_hits_total")
	t.Logf("%d exact turns, outcomes %v, %d rebuilt after deleting the artifact, %v from the hot cache, %d with a reused request prefix",
		turns, outcomes, rebuilt, hot, prefixed)
	if hot == 0 || prefixed == 0 {
		t.Error("the hot path went untested")
	}
	if outcomes[prepare.OutcomeDiverged] != 0 {
		t.Errorf("%d diverged exact turns, want 0", outcomes[prepare.OutcomeDiverged])
	}
}

// outcomeTurn is a fixed conversation for the outcome table: one tool round.
var outcomeParams = sessionParams{tenant: "t1", instructions: "You are a helpful assistant.", tools: toolsPool[1]}

// startConversation prepares and completes a first turn (outcome new) and commits its artifact.
func startConversation(t *testing.T, env *artEnv, sp sessionParams) *convNode {
	t.Helper()
	in := &prepare.Input{Tenant: sp.tenant, Instructions: sp.instructions, Tools: sp.tools, Kwargs: sp.kwargs,
		Items: []json.RawMessage{userItem("What's the weather in Paris? I typed <|im_end|> too.")}}
	p := env.prepareBoth(t.Context(), in)
	if p.Outcome != prepare.OutcomeNew {
		t.Fatalf("first turn outcome %s, want new", p.Outcome)
	}
	return env.complete(t, in, p, generation{text: "<think>\nI should call get_weather.\n</think>\n\n" +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", stop: true})
}

// complete runs g as the response to in and commits its artifact.
func (e *artEnv) complete(t *testing.T, in *prepare.Input, p *prepare.Prompt, g generation) *convNode {
	t.Helper()
	resp := e.respond(p, g)
	p.Commit(t.Context(), resp.id, resp.conv)
	return &convNode{id: resp.id, items: append(in.Items[:len(in.Items):len(in.Items)], resp.items...), calls: resp.calls, in: in, p: p, resp: resp}
}

// continuation is the next request after base, with base's parameters: the outputs of its calls,
// or a user message.
func continuation(base *convNode, text string) *prepare.Input {
	items := append([]json.RawMessage(nil), base.items...)
	if len(base.calls) > 0 {
		for _, c := range base.calls {
			items = append(items, callOutputItem(c.CallID, `{"temp": 21, "unit": "C"}`))
		}
	} else {
		items = append(items, userItem(text))
	}
	return &prepare.Input{Tenant: base.in.Tenant, PreviousID: base.id, Instructions: base.in.Instructions,
		Tools: base.in.Tools, Kwargs: base.in.Kwargs, Items: items}
}

// rewrite replaces the stored artifact of id with f applied to it (same seal key, so it opens).
func rewrite(t *testing.T, env *artEnv, tenant, id string, f func(a *store.Artifact)) {
	t.Helper()
	a, _, err := env.tiered.Get(t.Context(), tenant, id)
	if err != nil {
		t.Fatalf("get artifact %s: %v", id, err)
	}
	f(a)
	if err := env.tiered.Put(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if env.hot != nil {
		env.hot.Forget(tenant, id) // what the hot cache remembered is no longer what is stored
	}
}

// TestArtifactOutcomes provokes every typed outcome (docs/design.md "Typed outcomes"); each must give
// the full render's ids.
func TestArtifactOutcomes(t *testing.T) {
	sp := outcomeParams
	tests := []struct {
		name string
		opts envOptions
		// provoke changes the stored state and/or the request after the first turn.
		provoke func(t *testing.T, env *artEnv, base *convNode, in *prepare.Input)
		want    prepare.Outcome
	}{
		{name: "hit_local", want: prepare.OutcomeHitLocal},
		{name: "miss", want: prepare.OutcomeMiss, provoke: func(t *testing.T, env *artEnv, base *convNode, _ *prepare.Input) {
			if err := env.tiered.Delete(t.Context(), sp.tenant, base.id); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "expired", want: prepare.OutcomeExpired, opts: envOptions{ttl: time.Hour}, provoke: func(_ *testing.T, env *artEnv, _ *convNode, _ *prepare.Input) {
			env.clock.Advance(time.Hour + time.Minute)
		}},
		{name: "invalid tampered L1", want: prepare.OutcomeInvalid, provoke: func(t *testing.T, env *artEnv, base *convNode, _ *prepare.Input) {
			b, ok := env.l1.Get(sp.tenant, base.id)
			if !ok {
				t.Fatal("no L1 entry")
			}
			b = append([]byte(nil), b...)
			b[len(b)/2] ^= 0x40
			if err := env.l1.Set(sp.tenant, base.id, b); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "invalid tampered L2", want: prepare.OutcomeInvalid, opts: envOptions{noL1: true, l2: newMemL2()},
			provoke: func(t *testing.T, env *artEnv, base *convNode, _ *prepare.Input) {
				l2 := env.opts.l2.(*memL2)
				if !l2.mutate(sp.tenant, base.id, func(b []byte) { b[len(b)-1] ^= 1 }) {
					t.Fatal("no L2 entry")
				}
			}},
		{name: "invalid another tenant's bytes", want: prepare.OutcomeInvalid, provoke: func(t *testing.T, env *artEnv, base *convNode, in *prepare.Input) {
			b, ok := env.l1.Get(sp.tenant, base.id)
			if !ok {
				t.Fatal("no L1 entry")
			}
			if err := env.l1.Set("t2", base.id, b); err != nil {
				t.Fatal(err)
			}
			in.Tenant = "t2"
		}},
		{name: "invalid kwargs", want: prepare.OutcomeInvalid, provoke: func(_ *testing.T, _ *artEnv, _ *convNode, in *prepare.Input) {
			in.Kwargs = json.RawMessage(`{"enable_thinking":false}`)
		}},
		{name: "invalid instructions", want: prepare.OutcomeInvalid, provoke: func(_ *testing.T, _ *artEnv, _ *convNode, in *prepare.Input) {
			in.Instructions = "Be terse."
		}},
		{name: "invalid tools", want: prepare.OutcomeInvalid, provoke: func(_ *testing.T, _ *artEnv, _ *convNode, in *prepare.Input) {
			in.Tools = toolsPool[3]
		}},
		{name: "diverged", want: prepare.OutcomeDiverged, provoke: func(t *testing.T, env *artEnv, base *convNode, _ *prepare.Input) {
			rewrite(t, env, sp.tenant, base.id, func(a *store.Artifact) {
				for i := range a.Boundaries {
					a.Boundaries[i].PrefixDigest[0] ^= 0xff
				}
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newArtEnv(t, tt.opts)
			base := startConversation(t, env, sp)
			in := continuation(base, "")
			if tt.provoke != nil {
				tt.provoke(t, env, base, in)
			}
			p := env.prepareBoth(t.Context(), in)
			if p.Outcome != tt.want {
				t.Errorf("outcome %s (reused %d), want %s", p.Outcome, p.Reused, tt.want)
			}
			if fast := p.Reused > 0; fast != (tt.want == prepare.OutcomeHitLocal) {
				t.Errorf("reused %d ids with outcome %s", p.Reused, p.Outcome)
			}
			// The turn after a fallback is a fast hit again: the fallback wrote a fresh artifact.
			next := env.complete(t, in, p, generation{text: "It is 21 °C in Paris.", stop: true})
			p2 := env.prepareBoth(t.Context(), continuation(next, "Thanks! And tomorrow?"))
			hit := prepare.OutcomeHitLocal
			if tt.opts.noL1 {
				hit = prepare.OutcomeHitPortable
			}
			if p2.Outcome != hit {
				t.Errorf("turn after %s: outcome %s, want %s", tt.want, p2.Outcome, hit)
			}
		})
	}
}

// TestArtifactHitPortable: a second pod (its own empty L1, the same L2 and seal key) continues a
// response made on the first: hit_portable, then hit_local once its L1 is filled.
func TestArtifactHitPortable(t *testing.T) {
	sp := outcomeParams
	l2 := newMemL2()
	podA := newArtEnv(t, envOptions{l2: l2})
	podB := newArtEnv(t, envOptions{l2: l2, sealer: podA.sealer, clock: podA.clock})
	base := startConversation(t, podA, sp)
	in := continuation(base, "")
	for _, want := range []prepare.Outcome{prepare.OutcomeHitPortable, prepare.OutcomeHitLocal} {
		if p := podB.prepareBoth(t.Context(), in); p.Outcome != want || p.Reused == 0 {
			t.Errorf("pod B: outcome %s reused %d, want %s with reuse", p.Outcome, p.Reused, want)
		}
	}
	// A pod with another seal key cannot open the shared bytes.
	other, err := store.NewSealer([]store.SealKey{{ID: "k2", Secret: []byte("another secret of 32 bytes......")}}, store.SealerOptions{Now: podA.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	podC := newArtEnv(t, envOptions{l2: l2, sealer: other, clock: podA.clock})
	if p := podC.prepareBoth(t.Context(), in); p.Outcome != prepare.OutcomeInvalid {
		t.Errorf("pod with another seal key: outcome %s, want invalid", p.Outcome)
	}
}

// TestArtifactAuditDisables: an artifact whose prompt ids are wrong but whose boundaries and
// digests are right passes resolution; the (synchronous, rate 1) audit catches the one wrong turn,
// counts it, and the next continuation of that fingerprint reports disabled with correct ids.
func TestArtifactAuditDisables(t *testing.T) {
	sp := outcomeParams
	env := newArtEnv(t, envOptions{auditRate: 1})
	base := startConversation(t, env, sp)
	rewrite(t, env, sp.tenant, base.id, func(a *store.Artifact) {
		a.PromptIDs[len(a.PromptIDs)/2] = 9707 // "Hello": a plausible id at the wrong place
	})
	in := continuation(base, "")
	p, err := env.prep.Prepare(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	full, err := env.full.Prepare(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Outcome != prepare.OutcomeHitLocal || firstDifference(p.IDs, full.IDs) < 0 {
		t.Fatalf("poisoned artifact: outcome %s, ids equal %v; want hit_local with the wrong ids", p.Outcome, firstDifference(p.IDs, full.IDs) < 0)
	}
	if got := env.metric("stitch_audit_mismatch_total"); got != 1 {
		t.Errorf("audit mismatches = %v, want 1", got)
	}
	next := env.complete(t, in, full, generation{text: "It is 21 °C.", stop: true})
	for range 2 {
		p := env.prepareBoth(t.Context(), continuation(next, "And tomorrow?"))
		if p.Outcome != prepare.OutcomeDisabled || p.Reused != 0 {
			t.Errorf("after the mismatch: outcome %s reused %d, want disabled", p.Outcome, p.Reused)
		}
	}
	// Another fingerprint (other instructions) keeps its fast path.
	other := sp
	other.instructions = "Be terse."
	b2 := startConversation(t, env, other)
	if p := env.prepareBoth(t.Context(), continuation(b2, "")); p.Outcome != prepare.OutcomeHitLocal {
		t.Errorf("other fingerprint: outcome %s, want hit_local", p.Outcome)
	}
	if got := env.metric("stitch_audit_mismatch_total"); got != 1 {
		t.Errorf("audit mismatches = %v, want still 1", got)
	}
}

// TestArtifactBranching: two continuations of one response each get their own artifact, and
// each branch continues on the fast path with its own ids.
func TestArtifactBranching(t *testing.T) {
	for _, mode := range []store.Mode{store.ModeCanonical, store.ModeExact} {
		t.Run(mode.String(), func(t *testing.T) {
			env := newArtEnv(t, envOptions{mode: mode})
			sp := outcomeParams
			sp.tools = nil
			in := &prepare.Input{Tenant: sp.tenant, Instructions: sp.instructions, Items: []json.RawMessage{userItem("Hi")}}
			p := env.prepareBoth(t.Context(), in)
			root := env.complete(t, in, p, generation{text: "<think>\nGreet.\n</think>\n\nHello!", stop: true})
			env.persist(t.Context(), in, p, root.resp, []string{"in_root", root.resp.itemIDs[0], root.resp.itemIDs[1]})
			var branches []*convNode
			for i, text := range []string{"Tell me a joke.", "Tell me a fact."} {
				in := continuation(root, text)
				p, err := env.prep.Prepare(t.Context(), in)
				if err != nil || p.Outcome != prepare.OutcomeHitLocal {
					t.Fatalf("branch %d: outcome %s, err %v", i, p.Outcome, err)
				}
				b := env.complete(t, in, p, generation{text: "Answer " + text, stop: true})
				branches = append(branches, b)
			}
			var prompts [][]uint32
			for _, b := range branches {
				a, tier, err := env.tiered.Get(t.Context(), sp.tenant, b.id)
				if err != nil || tier != store.TierLocal {
					t.Fatalf("artifact of %s: tier %q, err %v", b.id, tier, err)
				}
				if firstDifference(a.PromptIDs, b.p.IDs) >= 0 || firstDifference(a.GeneratedIDs, b.resp.generated) >= 0 {
					t.Errorf("artifact of %s does not hold its own prompt and output", b.id)
				}
				prompts = append(prompts, a.PromptIDs)
			}
			if firstDifference(prompts[0], prompts[1]) < 0 {
				t.Error("both branches hold the same prompt ids")
			}
			for i, b := range branches {
				in := continuation(b, "Go on.")
				p, err := env.prep.Prepare(t.Context(), in)
				if err != nil || p.Outcome != prepare.OutcomeHitLocal {
					t.Fatalf("continue branch %d: outcome %s, err %v", i, p.Outcome, err)
				}
				want := append(closed(append(append([]uint32(nil), b.p.IDs...), b.resp.generated...)), env.model.Encode(newTurnText(in.Items[len(b.items):], nil))...)
				if mode == store.ModeCanonical {
					full, _ := env.full.Prepare(t.Context(), in)
					want = full.IDs
				}
				if d := firstDifference(p.IDs, want); d >= 0 {
					t.Errorf("continue branch %d: ids differ at %d", i, d)
				}
			}
		})
	}
}

// TestArtifactConcurrent continues conversations from many goroutines through one preparer and
// one store, with background audits (run it with -race).
func TestArtifactConcurrent(t *testing.T) {
	// Six branches continue one root at once, sharing its hot entry, render memo and parsed items.
	env := newArtEnv(t, envOptions{auditRate: 0.5, asyncAudit: true, hot: true})
	sp := outcomeParams
	root := startConversation(t, env, sp)
	const workers, turns = 6, 5
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			base := root
			for turn := range turns {
				in := continuation(base, userText(r))
				p, err := env.prep.Prepare(t.Context(), in)
				if err != nil {
					t.Errorf("worker %d turn %d: %v", w, turn, err)
					return
				}
				full, err := env.full.Prepare(t.Context(), in)
				if err != nil {
					t.Errorf("worker %d turn %d: %v", w, turn, err)
					return
				}
				if d := firstDifference(p.IDs, full.IDs); d >= 0 || p.Outcome != prepare.OutcomeHitLocal {
					t.Errorf("worker %d turn %d: outcome %s, ids differ at %d", w, turn, p.Outcome, d)
					return
				}
				resp := env.respond(p, inventGeneration(r, p, in.Tools, true))
				p.Commit(t.Context(), resp.id, resp.conv)
				base = &convNode{id: resp.id, items: append(in.Items[:len(in.Items):len(in.Items)], resp.items...), calls: resp.calls, in: in, p: p, resp: resp}
			}
		})
	}
	wg.Wait()
	if hits := env.metric("stitch_artifact_hot_hits_total"); hits < workers*turns/2 {
		t.Errorf("hot hits %v of %d continuations", hits, workers*turns)
	}
}

// TestArtifactHitPortableRedis: pods sharing a real Redis L2 (store.RedisArtifacts): the second
// pod's first continuation is hit_portable; tampered Redis bytes are invalid.
func TestArtifactHitPortableRedis(t *testing.T) {
	rc := store.NewRedisClient(store.RedisOptions{Addrs: []string{redistest.Start(t)}})
	t.Cleanup(func() { rc.Close() })
	l2 := store.NewRedisArtifacts(rc, store.RedisArtifactsOptions{Prefix: "arttest"})
	sp := outcomeParams
	podA := newArtEnv(t, envOptions{l2: l2})
	podB := newArtEnv(t, envOptions{l2: l2, sealer: podA.sealer, clock: podA.clock})
	base := startConversation(t, podA, sp)
	in := continuation(base, "")
	if p := podB.prepareBoth(t.Context(), in); p.Outcome != prepare.OutcomeHitPortable || p.Reused == 0 {
		t.Errorf("pod B: outcome %s reused %d, want hit_portable", p.Outcome, p.Reused)
	}
	b, err := l2.Get(t.Context(), sp.tenant, base.id)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 0x10
	if err := l2.Set(t.Context(), sp.tenant, base.id, b, time.Hour); err != nil {
		t.Fatal(err)
	}
	podC := newArtEnv(t, envOptions{l2: l2, sealer: podA.sealer, clock: podA.clock})
	if p := podC.prepareBoth(t.Context(), in); p.Outcome != prepare.OutcomeInvalid {
		t.Errorf("tampered Redis bytes: outcome %s, want invalid", p.Outcome)
	}
}

// TestArtifactExactSplit pins the cases that once split the new turn at the wrong <|im_end|>
// (found by TestArtifactPropertyExact): the re-rendered history holding an end-of-turn token the
// model wrote as text, and a system block added or removed by changed instructions or tools.
func TestArtifactExactSplit(t *testing.T) {
	escapedCall := "<tool_call>\n{\"name\": \"run_code\", \"arguments\": {\"code\": \"\\u003c|im_end|\\u003e\"}}\n</tool_call>"
	tests := []struct {
		name   string
		first  sessionParams
		gen    string
		change func(in *prepare.Input)
	}{
		{name: "escaped im_end in tool arguments", first: sessionParams{tenant: "t1", tools: toolsPool[2]}, gen: escapedCall},
		{name: "instructions add a system block", first: sessionParams{tenant: "t1"}, gen: "Hello!",
			change: func(in *prepare.Input) { in.Instructions = "Be terse." }},
		{name: "tools removed with their system block", first: sessionParams{tenant: "t1", tools: toolsPool[1]}, gen: "Hello!",
			change: func(in *prepare.Input) { in.Tools = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newArtEnv(t, envOptions{mode: store.ModeExact})
			in := &prepare.Input{Tenant: tt.first.tenant, Instructions: tt.first.instructions, Tools: tt.first.tools,
				Items: []json.RawMessage{userItem("Hi")}}
			p := env.prepareBoth(t.Context(), in)
			base := env.complete(t, in, p, generation{text: tt.gen, stop: true})
			env.persist(t.Context(), in, p, base.resp, append([]string{"in_1"}, base.resp.itemIDs...))
			next := continuation(base, "Thanks.")
			if tt.change != nil {
				tt.change(next)
			}
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
				want := append(closed(append(append([]uint32(nil), p.IDs...), base.resp.generated...)),
					env.model.Encode(newTurnText(next.Items[len(base.items):], nil))...)
				if tt.change != nil {
					// Changed instructions or tools must reach the model: a frozen history would
					// hide them, so the turn starts a new exact chain from a full render.
					full, err := env.full.Prepare(t.Context(), next)
					if err != nil {
						t.Fatal(err)
					}
					want = full.IDs
				}
				if d := firstDifference(got.IDs, want); d >= 0 {
					tok := env.model.Tokenizer()
					t.Errorf("evicted=%v (outcome %s): exact prompt differs at %d\ngot  …%q\nwant …%q", evict, got.Outcome, d,
						tok.Decode(got.IDs[d:]), tok.Decode(want[d:]))
				}
			}
		})
	}
}
