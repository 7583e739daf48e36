package bench

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/upstream"
)

// prepFixture is a captured conversation per mode and context bucket: the exact PrepareInput the
// server built for a continuation turn, and the mode's preparer (its artifacts still cached).
type prepFixture struct {
	once sync.Once
	err  error
	// inputs[mode][bucket] is the sampled turn closest to the bucket's nominal size.
	inputs map[Mode]map[string]prepSample
	timing map[Mode]*proxy
	model  *render.Renderer
	// bodies[mode] are the workload's requests, for the whole-turn benchmarks.
	bodies map[Mode]map[turnKey][]byte
}

var fixture prepFixture

// loadFixture drives one session of 36 turns (contexts past 100k tokens) through a full-render
// and a canonical proxy in front of an in-process simulator without latency, once per process.
func loadFixture(b testing.TB) *prepFixture {
	fixture.once.Do(func() { fixture.load(loadDemo(b), family.Names{}, DefaultWorkload()) })
	if fixture.err != nil {
		b.Fatal(fixture.err)
	}
	return &fixture
}

// load drives w's first session with model m served as family names.
func (fx *prepFixture) load(m *render.Renderer, names family.Names, w Workload) {
	fx.model = m
	w.Sessions, w.Concurrency, w.Drift = 1, 1, 0
	w.TTFTBase, w.PrefillPerToken, w.DecodePerToken = 0, 0, 0
	fx.inputs, fx.timing, fx.bodies = map[Mode]map[string]prepSample{}, map[Mode]*proxy{}, map[Mode]map[turnKey][]byte{}
	for _, mode := range []Mode{ModeFull, ModeCanonical} {
		simi, err := (InProcessSim{Model: m, Family: names}).Start(context.Background(), w)
		if err != nil {
			fx.err = err
			return
		}
		p, err := newProxy(proxyOptions{mode: mode, model: m, family: names, upstream: simi.URL(), w: w})
		if err != nil {
			fx.err = err
			return
		}
		d := newDriver(w, p.url)
		if _, err := d.run(context.Background()); err != nil {
			fx.err = err
			return
		}
		d.close()
		fx.bodies[mode] = d.bodies
		fx.timing[mode] = p // kept open: its artifact cache serves the benchmark
		byBucket := map[string]prepSample{}
		for _, bk := range buckets {
			for _, s := range p.rec.samples[bk.name] {
				if cur, ok := byBucket[bk.name]; !ok || abs(s.tokens-bk.tokens) < abs(cur.tokens-bk.tokens) {
					byBucket[bk.name] = s
				}
			}
		}
		fx.inputs[mode] = byBucket
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// BenchmarkPrepare times one continuation's preparation (render the conversation, resolve the
// artifact, tokenize) at 1k, 10k and 100k prompt tokens, full render against canonical artifacts:
// the per-turn work stitch saves. Names are benchstat-friendly: mode=…/ctx=….
func BenchmarkPrepare(b *testing.B) {
	f := loadFixture(b)
	for _, mode := range []Mode{ModeFull, ModeCanonical} {
		for _, bk := range buckets {
			s, ok := f.inputs[mode][bk.name]
			if !ok {
				continue
			}
			p, stop := f.timing[mode].timing, f.timing[mode].stop
			b.Run(fmt.Sprintf("mode=%s/ctx=%s", mode, bk.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res, _, err := prepareRequest(context.Background(), p, stop, s.in)
					if err != nil {
						b.Fatal(err)
					}
					if mode == ModeCanonical && res.Reused == 0 {
						b.Fatalf("canonical continuation at %d tokens reused nothing (outcome %s)", s.tokens, res.Outcome)
					}
				}
				b.ReportMetric(float64(s.tokens), "tokens")
			})
		}
	}
}

// BenchmarkPrepareSteps splits a 100k-token continuation's preparation into its steps, to show
// where each mode's time goes. Full render: map the Responses items to messages, render the
// template, tokenize everything (the tokenizer's word cache is warm, as it is for a
// conversation's history), encode all ids into the request. Canonical on the pod that served the
// previous turn: the same mapping from parsed-item cache hits, the template replaying from the
// previous turn's memo, ExtendText (compare the texts, tokenize the changed tail), and a request
// whose reused ids are the previous turn's JSON. The digest path (artifact from L1 or Redis) is
// shown too. The previous turn is this conversation up to its last function call.
func BenchmarkPrepareSteps(b *testing.B) { prepareSteps(b, loadFixture(b)) }

// prepareSteps runs BenchmarkPrepareSteps' steps on fixture f's 100k-token continuation.
func prepareSteps(b *testing.B, f *prepFixture) {
	s, ok := f.inputs[ModeCanonical]["100k"]
	if !ok {
		b.Skip("no 100k sample")
	}
	m := f.model
	ctx := context.Background()
	conv, err := render.FromResponses(render.ResponsesInput{Instructions: s.in.Instructions, Items: s.in.Items, Tools: s.in.Tools})
	if err != nil {
		b.Fatal(err)
	}
	req := render.ChatRequest{Messages: conv.Messages, Tools: conv.Tools, AddGenerationPrompt: true, ChatTemplateKwargs: s.in.Kwargs}
	text, err := m.RenderText(req)
	if err != nil {
		b.Fatal(err)
	}
	// The previous turn: drop the new input and the previous output (through the last call).
	last := len(s.in.Items) - 1
	for last >= 0 && !strings.Contains(string(s.in.Items[last]), `"type":"function_call"`) {
		last--
	}
	prevIn := *s.in
	prevIn.Items = s.in.Items[:max(0, last)]
	items := render.NewItemCache(64 << 20)
	prevConv, err := render.FromResponses(render.ResponsesInput{Instructions: prevIn.Instructions, Items: prevIn.Items, Tools: prevIn.Tools, Cache: items})
	if err != nil {
		b.Fatal(err)
	}
	prevText, memo, err := m.RenderTextMemo(render.ChatRequest{Messages: prevConv.Messages, Tools: prevConv.Tools, AddGenerationPrompt: true, ChatTemplateKwargs: s.in.Kwargs}, nil)
	if err != nil {
		b.Fatal(err)
	}
	cached, err := render.FromResponses(render.ResponsesInput{Instructions: s.in.Instructions, Items: s.in.Items, Tools: s.in.Tools, Cache: items})
	if err != nil {
		b.Fatal(err)
	}
	// The stored-items form: the previous turn's conversation kept its prefix, which this one
	// resumes (the hot path), against the same items looked up by name in the cache.
	stored := render.ResponsesInput{Instructions: s.in.Instructions, Items: s.in.Items, Tools: s.in.Tools, Cache: items,
		Tenant: s.in.Tenant, StoredIDs: s.in.StoredIDs}
	prevStored := stored
	prevStored.Items, prevStored.StoredIDs, prevStored.KeepPrefix = prevIn.Items, s.in.StoredIDs[:min(len(s.in.StoredIDs), len(prevIn.Items))], true
	prevStoredConv, err := render.FromResponses(prevStored)
	if err != nil {
		b.Fatal(err)
	}
	resumed := stored
	resumed.Resume, resumed.KeepPrefix = prevStoredConv.Prefix, true
	if c, err := render.FromResponses(resumed); err != nil || c.Resumed == 0 {
		b.Fatalf("resumed %d items (%v)", c.Resumed, err)
	}
	cachedReq := req
	cachedReq.Messages = cached.Messages
	prevEnc := m.EncodeWithBoundaries(prevText)
	enc, reuse, _ := m.ExtendText(prevEnc, prevText, text)
	if reuse.Tokens == 0 {
		b.Fatal("ExtendText reused nothing")
	}
	prefixReq := upstream.CompletionRequest{Prompt: enc.IDs[:reuse.Tokens]}
	prefix := prefixReq.AppendJSON(nil)
	prefix = append(prefix[len(`{"model":"","prompt":[`):bytes.IndexByte(prefix, ']')], ',')
	st := f.timing[ModeCanonical].store
	art, _, err := st.Get(ctx, s.in.Tenant, s.in.PreviousID)
	if err != nil {
		b.Fatal(err)
	}
	prev := render.Encoding{IDs: art.PromptIDs, Boundaries: make([]render.Boundary, len(art.Boundaries))}
	for i, bd := range art.Boundaries {
		prev.Boundaries[i] = render.Boundary{Offset: bd.TextOffset, Index: bd.TokenIndex, Digest: bd.PrefixDigest}
	}
	full := upstream.CompletionRequest{Model: "bench", Prompt: enc.IDs, MaxTokens: 4096, Stream: true}
	reused := full
	reused.PromptPrefix, reused.PromptPrefixIDs = prefix, reuse.Tokens
	steps := []struct {
		name string
		f    func() error
	}{
		{"items_to_messages", func() error {
			_, err := render.FromResponses(render.ResponsesInput{Instructions: s.in.Instructions, Items: s.in.Items, Tools: s.in.Tools})
			return err
		}},
		{"items_to_messages_cached", func() error {
			_, err := render.FromResponses(render.ResponsesInput{Instructions: s.in.Instructions, Items: s.in.Items, Tools: s.in.Tools, Cache: items})
			return err
		}},
		{"items_to_messages_stored", func() error { _, err := render.FromResponses(stored); return err }},
		{"items_to_messages_resumed", func() error { _, err := render.FromResponses(resumed); return err }},
		{"template", func() error { _, err := m.RenderText(req); return err }},
		{"template_memo", func() error { _, _, err := m.RenderTextMemo(cachedReq, memo); return err }},
		{"encode", func() error { m.Encode(text); return nil }},
		{"encode_boundaries", func() error { m.EncodeWithBoundaries(text); return nil }},
		{"extend_text", func() error { m.ExtendText(prevEnc, prevText, text); return nil }},
		{"request_full", func() error { full.Parts(); return nil }},
		{"request_reused_prefix", func() error { reused.Parts(); return nil }},
		{"digest_path_artifact_get", func() error { _, _, err := st.Get(ctx, s.in.Tenant, s.in.PreviousID); return err }},
		{"digest_path_extend", func() error { m.Extend(prev, text); return nil }},
	}
	for _, step := range steps {
		b.Run(fmt.Sprintf("ctx=100k/step=%s", step.name), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if err := step.f(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
