package prepare_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/render/harmony"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/stream"
)

// chainCase is one record of testdata/harmony/chains.json (tools/oracle/harmony_chains.py): a
// previous_response_id chain, each turn with its request, what the model generates, and (in
// chains_golden.json) the prompt openai_harmony renders from the messages vLLM's message store
// holds for it.
type chainCase struct {
	Name    string `json:"name"`
	Options struct {
		StartDate            string `json:"start_date"`
		InstructionsInSystem bool   `json:"instructions_in_system"`
	} `json:"options"`
	Turns []struct {
		Request   json.RawMessage `json:"request"`
		Previous  bool            `json:"previous"`
		Generated string          `json:"generated"`
		Stop      *string         `json:"stop"`
	} `json:"turns"`
}

type chainGolden struct {
	Name  string `json:"name"`
	Turns []struct {
		IDs  []uint32 `json:"ids"`
		Text string   `json:"text"`
	} `json:"turns"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestHarmonyChainsMatchMessageStore: every turn of every chain, continued by
// previous_response_id (or replayed statelessly, then continued), prepares exactly the ids
// openai_harmony renders from the messages vLLM's message store holds: earlier calls with the
// `<|constrain|>json` the model wrote, preambles on commentary, a message the output stopped inside
// left out, a continuation's system item skipped. The full render (the fallback) and the artifact
// engine, with and without the hot cache, agree turn by turn, and so do their notes.
func TestHarmonyChainsMatchMessageStore(t *testing.T) {
	var cases []chainCase
	var golden []chainGolden
	readJSON(t, "../testdata/harmony/chains.json", &cases)
	readJSON(t, "../testdata/harmony/chains_golden.json", &golden)
	if len(cases) != len(golden) {
		t.Fatalf("%d chains, %d goldens", len(cases), len(golden))
	}
	turns := 0
	for ci, c := range cases {
		if golden[ci].Name != c.Name || len(golden[ci].Turns) != len(c.Turns) {
			t.Fatalf("chain %s: golden %s with %d turns", c.Name, golden[ci].Name, len(golden[ci].Turns))
		}
		turns += len(c.Turns)
		for _, hot := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/hot=%v", c.Name, hot), func(t *testing.T) {
				runChain(t, c, golden[ci], hot)
			})
		}
	}
	if turns < 28 {
		t.Errorf("%d turns, want at least 28", turns)
	}
}

func runChain(t *testing.T, c chainCase, golden chainGolden, hot bool) {
	ctx := context.Background()
	e := newHEnv(t, store.ModeCanonical, harmony.Options{StartDate: c.Options.StartDate, InstructionsInSystem: c.Options.InstructionsInSystem}, hot)
	var (
		prevCP    *store.Checkpoint
		prevItems []json.RawMessage
		callIDs   []string // the chain's generated calls, in order: "@k" in the cases is the k-th
	)
	for ti, turn := range c.Turns {
		req := gjson.ParseBytes(turn.Request)
		input := chainInput(t, req.Get("input"), callIDs)
		in := &prepare.Input{Tenant: "t", ReasoningEffort: req.Get("reasoning.effort").Str}
		if v := req.Get("instructions"); v.Exists() {
			in.Instructions, in.EmptyInstructions = v.Str, v.Str == ""
		}
		if v := req.Get("tools"); v.Exists() {
			in.Tools = json.RawMessage(v.Raw)
		}
		inIDs := make([]string, len(input))
		for i := range input {
			inIDs[i] = e.newID("in")
		}
		var convIDs []string
		if turn.Previous {
			in.PreviousID, in.Previous = prevCP.ID, prevCP
			in.Items = append(slices.Clone(prevItems), input...)
			in.StoredIDs = prevCP.ConversationItemIDs
			convIDs = slices.Clone(prevCP.ConversationItemIDs)
		} else {
			in.Items = input
		}
		want := golden.Turns[ti]
		full, err := e.full.Prepare(ctx, in)
		if err != nil {
			t.Fatalf("turn %d: full render: %v", ti, err)
		}
		p, err := e.eng.Prepare(ctx, in)
		if err != nil {
			t.Fatalf("turn %d: artifact engine: %v", ti, err)
		}
		for name, got := range map[string][]uint32{"full render": full.IDs, "artifact engine": p.IDs} {
			if d := firstDifference(got, want.IDs); d >= 0 {
				t.Fatalf("turn %d: %s differs from vLLM's message-store prompt at id %d of %d/%d:\n got %q\nwant %q", ti, name, d, len(got), len(want.IDs),
					e.enc.Decode(got[max(0, d-8):min(len(got), d+8)]), e.enc.Decode(want.IDs[max(0, d-8):min(len(want.IDs), d+8)]))
			}
		}
		if ti > 0 && turn.Previous && p.Outcome != prepare.OutcomeHitLocal && p.Outcome != prepare.OutcomeHitPortable {
			t.Errorf("turn %d: outcome %s, want a hit", ti, p.Outcome)
		}

		// The model's output through the real pipeline (the Harmony family's parser, the emitter).
		conv, items, itemIDs := chainRespond(t, e, turn.Generated, turn.Stop)
		for i, raw := range items {
			if gjson.GetBytes(raw, "type").Str == "function_call" {
				callIDs = append(callIDs, gjson.GetBytes(items[i], "call_id").Str)
			}
		}
		convIDs = append(append(convIDs, inIDs...), itemIDs...)
		cp := &store.Checkpoint{
			ID: conv.Emitter().ID(), Tenant: "t", PreviousID: in.PreviousID, Model: "gptoss", Status: conv.Response().Status,
			CreatedAt: e.clock.Now(), InputItemIDs: inIDs, OutputItemIDs: itemIDs, ConversationItemIDs: convIDs,
			PromptLen: len(p.IDs), GeneratedIDs: conv.TokenIDs(),
		}
		p.Annotate(cp)
		p.AnnotateOutput(cp, conv)
		fullCP := &store.Checkpoint{InputItemIDs: inIDs}
		full.AnnotateOutput(fullCP, conv)
		if !mapsEqual(cp.ItemNotes, fullCP.ItemNotes) {
			t.Fatalf("turn %d: notes differ: artifact engine %q, full render %q", ti, cp.ItemNotes, fullCP.ItemNotes)
		}
		stored := make([]store.Item, 0, len(input)+len(items))
		for i := range input {
			stored = append(stored, store.Item{ID: inIDs[i], Data: input[i]})
		}
		for i := range items {
			stored = append(stored, store.Item{ID: itemIDs[i], Data: items[i]})
		}
		if err := e.cps.PutResponse(ctx, cp, stored); err != nil {
			t.Fatal(err)
		}
		p.Commit(ctx, cp.ID, conv)
		prevCP = cp
		prevItems = append(slices.Clone(in.Items), items...)
	}
}

// chainInput is a turn's input as items, "@k" call ids replaced by the chain's k-th call id.
func chainInput(t *testing.T, v gjson.Result, callIDs []string) []json.RawMessage {
	t.Helper()
	if v.Type == gjson.String {
		raw, _ := json.Marshal(map[string]string{"role": "user", "content": v.Str})
		return []json.RawMessage{raw}
	}
	var out []json.RawMessage
	for _, it := range v.Array() {
		raw := it.Raw
		if id := it.Get("call_id").Str; strings.HasPrefix(id, "@") {
			var k int
			if _, err := fmt.Sscanf(id, "@%d", &k); err != nil || k < 1 || k > len(callIDs) {
				t.Fatalf("call_id %q: %d calls so far", id, len(callIDs))
			}
			raw = strings.Replace(raw, `"`+id+`"`, `"`+callIDs[k-1]+`"`, 1)
		}
		out = append(out, json.RawMessage(raw))
	}
	return out
}

// chainRespond runs a generation (Harmony text after "<|start|>assistant", then the stop
// marker; none: cut by max_tokens) through the Harmony family's parser and the emitter.
func chainRespond(t *testing.T, e *hEnv, generated string, stop *string) (*stream.Converter, []json.RawMessage, []string) {
	t.Helper()
	finish := "length"
	if stop != nil {
		generated += *stop
		finish = "stop"
	}
	ids := e.model.Encode(generated)
	conv := stream.NewConverter(stream.ConverterOptions{
		Output:  e.fam.NewParser(e.model.Tokenizer().NewDecodeStream(), family.Turn{ParallelToolCalls: true}),
		Emitter: stream.EmitterOptions{Response: stream.Response{Model: "gptoss"}, NewID: e.newID, Now: e.clock.Now},
	})
	conv.Start(nil)
	conv.Chunk(nil, &stream.Chunk{TokenIDs: ids, FinishReason: finish})
	conv.End(nil)
	var items []json.RawMessage
	var itemIDs []string
	for _, it := range conv.Response().Output {
		items = append(items, it.AppendJSON(nil))
		itemIDs = append(itemIDs, it.ID)
	}
	return conv, items, itemIDs
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestHarmonyContinuationKeepsFirstPreamble: on an unpinned date, a canonical continuation keeps
// its chain's first start date, effort and instructions (vLLM continues with the stored system
// and developer messages), by full render and by artifact alike; an effort gpt-oss does not take
// is still a 400 naming reasoning.effort.
func TestHarmonyContinuationKeepsFirstPreamble(t *testing.T) {
	ctx := context.Background()
	e := newHEnv(t, store.ModeCanonical, harmony.Options{}, true)
	day1 := harmony.StartDate("", e.clock.Now())
	user := func(s string) json.RawMessage {
		raw, _ := json.Marshal(map[string]string{"role": "user", "content": s})
		return raw
	}
	in1 := &prepare.Input{Tenant: "t", Instructions: "Be brief.", Items: []json.RawMessage{user("hi")}}
	p1, err := e.eng.Prepare(ctx, in1)
	if err != nil {
		t.Fatal(err)
	}
	ret := "<|return|>"
	conv, items, itemIDs := chainRespond(t, e, "<|channel|>final<|message|>Hello.", &ret)
	convIDs := append([]string{"in_1"}, itemIDs...)
	cp := &store.Checkpoint{ID: conv.Emitter().ID(), Tenant: "t", Model: "gptoss", Status: "completed", CreatedAt: e.clock.Now(),
		InputItemIDs: []string{"in_1"}, OutputItemIDs: itemIDs, ConversationItemIDs: convIDs, GeneratedIDs: conv.TokenIDs()}
	p1.Annotate(cp)
	p1.AnnotateOutput(cp, conv)
	p1.Commit(ctx, cp.ID, conv)

	e.clock.Advance(50 * time.Hour) // the unpinned date rolls over twice
	all := append(append([]json.RawMessage{in1.Items[0]}, items...), user("again"))
	in2 := &prepare.Input{Tenant: "t", PreviousID: cp.ID, Previous: cp, StoredIDs: convIDs, ReasoningEffort: "high", Items: all}
	ref, err := prepare.NewHarmonyRender(prepare.Harmony{Encoder: e.enc, Options: harmony.Options{StartDate: day1}}).Prepare(ctx,
		&prepare.Input{Tenant: "t", Instructions: "Be brief.", Items: all})
	if err != nil {
		t.Fatal(err)
	}
	full, err := e.full.Prepare(ctx, in2)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := e.eng.Prepare(ctx, in2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(full.IDs, ref.IDs) || !slices.Equal(p2.IDs, ref.IDs) {
		t.Fatalf("continuation differs from the first turn's preamble (date %s, no effort, its instructions): full at %d, artifact at %d (outcome %s)",
			day1, firstDifference(full.IDs, ref.IDs), firstDifference(p2.IDs, ref.IDs), p2.Outcome)
	}
	if !strings.Contains(e.enc.Decode(p2.IDs), "Current date: "+day1) {
		t.Fatalf("the prompt does not carry the first date %s", day1)
	}
	in2.ReasoningEffort = "none"
	for name, eng := range map[string]prepare.Engine{"full": e.full, "artifacts": e.eng} {
		_, err := eng.Prepare(ctx, in2)
		var ie *render.InputError
		if !errors.As(err, &ie) || ie.Param != "reasoning.effort" {
			t.Errorf("%s: effort none: %v, want an input error naming reasoning.effort", name, err)
		}
	}
}
