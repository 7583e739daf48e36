package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// recordLine is one generation request as `stitch sim --record` logs it.
type recordLine struct {
	Endpoint       string   `json:"endpoint"`
	PromptTokenIDs []uint32 `json:"prompt_token_ids"`
	CachedTokens   int      `json:"cached_tokens"`
	OutputTokenIDs []uint32 `json:"output_token_ids"`
	FinishReason   string   `json:"finish_reason"`
}

// TestExactPromptIDs checks the token ids stitch sends to the model (recorded by a dedicated
// sim) in canonical mode:
//   - a first turn and a chained text turn equal vLLM's chat path for the same messages
//     (the sim's POST /tokenize chat form);
//   - a turn continued with previous_response_id (token artifact, certified suffix) sends
//     exactly the ids of the same conversation replayed in full without it (full render),
//     for text turns and for a tool round with reasoning;
//   - continuations hit the prefix cache, and usage counts the ids that were sent.
func TestExactPromptIDs(t *testing.T) {
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack (STITCH_E2E_BASE_URL): cannot record the sim")
	}
	procs := newExtraProcs(t)
	recPath := filepath.Join(t.TempDir(), "record.jsonl")
	sim := procs.start("recording sim", func() (*proc, error) { return st.startSim("--record", recPath) })
	serve := procs.start("serve", func() (*proc, error) { return st.startServe(sim.addr, t.TempDir()) })
	c := newClient("http://" + serve.addr)
	ctx := testContext(t)

	const instructions = "You are a careful assistant. Answer in plain words and keep every answer short."
	const u1, u2, u3 = "Hello there, who are you?", "Tell me more about that.", "What is the weather in Paris? Use get_weather."
	tools := []responses.ToolUnionParam{weatherTool()}
	userMsg := func(s string) json.RawMessage { return mustJSON(t, map[string]any{"role": "user", "content": s}) }
	var usages []wireUsage
	create := func(what string, p responses.ResponseNewParams, opts ...option.RequestOption) (*responses.Response, []json.RawMessage) {
		t.Helper()
		p.Model, p.Instructions = modelName, openai.String(instructions)
		r, err := c.Responses.New(ctx, p, opts...)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		w := decodeResponse(t, r.RawJSON())
		checkCompleted(t, w)
		usages = append(usages, *w.Usage)
		var out []json.RawMessage
		for _, it := range r.Output {
			out = append(out, json.RawMessage(it.RawJSON()))
		}
		return r, out
	}
	text := func(s string) responses.ResponseNewParamsInputUnion {
		return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
	}

	r1, out1 := create("turn 1", responses.ResponseNewParams{Input: text(u1)})
	r2, out2 := create("turn 2 (chained)", responses.ResponseNewParams{PreviousResponseID: openai.String(r1.ID), Input: text(u2)})
	replay2 := slices.Concat([]json.RawMessage{userMsg(u1)}, out1, []json.RawMessage{userMsg(u2)})
	create("turn 2 (replayed)", responses.ResponseNewParams{}, option.WithJSONSet("input", replay2))
	r3, out3 := create("turn 3 (chained, tool call)", responses.ResponseNewParams{PreviousResponseID: openai.String(r2.ID), Tools: tools, Input: text(u3)})
	fc := checkWeatherCall(t, decodeResponse(t, r3.RawJSON()))
	fco := mustJSON(t, map[string]any{"type": "function_call_output", "call_id": fc.CallID, "output": weatherOutput})
	create("turn 4 (chained, tool result)", responses.ResponseNewParams{PreviousResponseID: openai.String(r3.ID), Tools: tools},
		option.WithJSONSet("input", []json.RawMessage{fco}))
	replay4 := slices.Concat([]json.RawMessage{userMsg(u1)}, out1, []json.RawMessage{userMsg(u2)}, out2,
		[]json.RawMessage{userMsg(u3)}, out3, []json.RawMessage{fco})
	create("turn 4 (replayed)", responses.ResponseNewParams{Tools: tools}, option.WithJSONSet("input", replay4))

	// vLLM's chat path for the text turns, asked before the sim stops.
	sys := map[string]any{"role": "system", "content": instructions}
	asst1 := assistantMessage(t, out1)
	want := [][]uint32{
		tokenizeChat(t, sim.addr, []any{sys, map[string]any{"role": "user", "content": u1}}),
		tokenizeChat(t, sim.addr, []any{sys, map[string]any{"role": "user", "content": u1}, asst1,
			map[string]any{"role": "user", "content": u2}}),
	}

	// Stopping the sim ends its writes: every generation line is in the file after this.
	if err := sim.stop(); err != nil {
		t.Fatalf("stop recording sim: %v", err)
	}
	recs := readRecord(t, recPath)
	if len(recs) != 6 {
		t.Fatalf("sim recorded %d generations, want 6 (one per turn)", len(recs))
	}
	names := []string{"turn 1", "turn 2 chained", "turn 2 replayed", "turn 3 chained", "turn 4 chained", "turn 4 replayed"}
	for i, w := range want {
		if !slices.Equal(recs[i].PromptTokenIDs, w) {
			t.Errorf("%s: prompt ids differ from vLLM's chat path for the same messages\n got %v\nwant %v", names[i], recs[i].PromptTokenIDs, w)
		}
	}
	for _, pair := range [][2]int{{1, 2}, {4, 5}} {
		a, b := recs[pair[0]].PromptTokenIDs, recs[pair[1]].PromptTokenIDs
		if !slices.Equal(a, b) {
			t.Errorf("%s sent other ids than %s (artifact continuation vs full render)\n got %v\nwant %v", names[pair[0]], names[pair[1]], a, b)
		}
	}
	for i, r := range recs {
		if i > 0 && r.CachedTokens == 0 {
			t.Errorf("%s: no prefix-cache hit (cached_tokens 0 of %d)", names[i], len(r.PromptTokenIDs))
		}
		if u := usages[i]; u.InputTokens != len(r.PromptTokenIDs) || u.OutputTokens != len(r.OutputTokenIDs) {
			t.Errorf("%s: usage input/output = %d/%d, the sim saw %d/%d", names[i], u.InputTokens, u.OutputTokens, len(r.PromptTokenIDs), len(r.OutputTokenIDs))
		}
		t.Logf("%s: %d prompt ids, %d cached", names[i], len(r.PromptTokenIDs), r.CachedTokens)
	}
}

// assistantMessage turns a text turn's output items into the chat message vLLM would get:
// the message text as content, the reasoning text as reasoning.
func assistantMessage(t *testing.T, out []json.RawMessage) map[string]any {
	t.Helper()
	msg := map[string]any{"role": "assistant", "content": ""}
	for _, raw := range out {
		var it wireItem
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatalf("decode output item: %v", err)
		}
		var s string
		for _, p := range it.Content {
			s += p.Text
		}
		switch it.Type {
		case "message":
			msg["content"] = s
		case "reasoning":
			msg["reasoning"] = s
		default:
			t.Fatalf("text turn has a %s item", it.Type)
		}
	}
	return msg
}

// tokenizeChat asks the sim at simAddr for the ids of a chat request (vLLM's POST /tokenize
// with messages, add_generation_prompt true).
func tokenizeChat(t *testing.T, simAddr string, messages []any) []uint32 {
	t.Helper()
	sim := &stack{baseURL: "http://" + simAddr}
	body := mustJSON(t, map[string]any{"model": modelName, "messages": messages, "add_generation_prompt": true})
	status, _, b := sim.doRaw(t, testContext(t), http.MethodPost, "/tokenize", body, nil)
	var tok struct {
		Tokens []uint32 `json:"tokens"`
	}
	if err := json.Unmarshal(b, &tok); status != http.StatusOK || err != nil || len(tok.Tokens) == 0 {
		t.Fatalf("sim /tokenize = %d %s", status, b)
	}
	return tok.Tokens
}

// readRecord reads the generation lines of a sim record file.
func readRecord(t *testing.T, path string) []recordLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open record: %v", err)
	}
	defer f.Close()
	var out []recordLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var r recordLine
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record line: %v: %s", err, sc.Bytes())
		}
		// upstream.Probe (startup and readiness) asks for one token of the prompt [0]; it is
		// not a turn.
		probe := len(r.PromptTokenIDs) == 1 && r.PromptTokenIDs[0] == 0 && len(r.OutputTokenIDs) <= 1
		if r.Endpoint == "/v1/completions" && !probe {
			out = append(out, r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read record: %v", err)
	}
	return out
}
