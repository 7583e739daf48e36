package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// gptossStartDate pins Harmony's conversation start date for serve (VLLM_SYSTEM_START_DATE) and
// for stitch render --responses, so the reference prompts do not depend on the day.
const gptossStartDate = "2026-01-05"

// TestGPTOSS serves the gpt-oss tokenizer through Harmony (stitch sim speaking Harmony, stitch
// serve with --tool-call-parser openai) with the Go SDK, in both continuation modes: a tool round
// trip (non-stream call, streamed final answer), a text turn, a call forced by tool_choice, then
// the forced call's output; reasoning items present. In canonical mode every prompt the sim
// received equals `stitch render --responses` of the whole conversation so far with each earlier
// call's header as the model wrote it (`<|constrain|>json`: vLLM's message store keeps it; the
// forced call header after it); in exact mode every continuation equals the previous prompt and its
// generated ids (a final <|return|> closed as <|end|>) followed by the new turn as that render
// writes it. Every continuation is an artifact hit.
func TestGPTOSS(t *testing.T) {
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack: no binary to start a gpt-oss stack with")
	}
	for _, mode := range []string{"canonical", "exact"} {
		t.Run(mode, func(t *testing.T) { testGPTOSS(t, st, mode) })
	}
}

func testGPTOSS(t *testing.T, st *stack, mode string) {
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "models", "gptoss"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("VLLM_SYSTEM_START_DATE", gptossStartDate) // inherited by the serve started below
	const model = "gptoss"
	family := []string{"--model-dir", dir, "--served-model-name", model, "--tool-call-parser", "openai", "--reasoning-parser", "openai_gptoss"}
	procs := newExtraProcs(t)
	rec := filepath.Join(t.TempDir(), "record.jsonl")
	sim := procs.start("gpt-oss sim", func() (*proc, error) {
		return startReady(st.bin, "sim", "/health", func(addr string) []string {
			return append([]string{"sim", "--listen", addr, "--fast", "--record", rec}, family...)
		})
	})
	data := t.TempDir()
	serve := procs.start("gpt-oss serve", func() (*proc, error) {
		return startReady(st.bin, "serve", "/readyz", func(addr string) []string {
			return append([]string{"serve", "--listen", addr, "--upstream", "http://" + sim.addr, "--data-dir", data, "--mode", mode}, family...)
		})
	})
	c := newClient("http://" + serve.addr)
	ctx := testContext(t)
	tools := []responses.ToolUnionParam{weatherTool()}
	toolsJSON := json.RawMessage(mustJSON(t, tools))

	var conv []json.RawMessage // the whole conversation, as the reference renders it
	var bodies [][]byte        // one reference request per turn
	var prevBodies [][]byte    // per continuation: the conversation before its input
	addTurn := func(input ...json.RawMessage) {
		if len(conv) > 0 {
			prevBodies = append(prevBodies, mustJSON(t, map[string]any{"input": conv, "tools": toolsJSON}))
		}
		conv = append(conv, input...)
		bodies = append(bodies, mustJSON(t, map[string]any{"input": conv, "tools": toolsJSON}))
	}
	outputs := func(raw string) []string {
		var types []string
		for _, it := range gjson.Get(raw, "output").Array() {
			conv = append(conv, json.RawMessage(it.Raw))
			types = append(types, it.Get("type").Str)
		}
		return types
	}

	// Turn 1 (non-stream): the model reasons and calls get_weather.
	const question = "What is the weather in Paris? Use get_weather."
	addTurn(mustJSON(t, map[string]any{"role": "user", "content": question}))
	r1, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: model, Tools: tools, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(question)},
	})
	if err != nil {
		t.Fatalf("turn 1: %v", err)
	}
	types := outputs(r1.RawJSON())
	if !slices.Contains(types, "reasoning") || !slices.Contains(types, "function_call") {
		t.Fatalf("turn 1 output %v, want reasoning and function_call:\n%s", types, r1.RawJSON())
	}
	var callID string
	for _, it := range gjson.Get(r1.RawJSON(), "output").Array() {
		if it.Get("type").Str == "function_call" {
			callID = it.Get("call_id").Str
			if args := it.Get("arguments").Str; it.Get("name").Str != "get_weather" || !gjson.Valid(args) {
				t.Errorf("call %s(%s)", it.Get("name").Str, args)
			}
		}
	}

	// Turn 2 (stream): the tool output → a final answer.
	out := mustJSON(t, map[string]any{"type": "function_call_output", "call_id": callID, "output": weatherOutput})
	addTurn(out)
	fco := responses.ResponseInputItemParamOfFunctionCallOutput(weatherOutput)
	fco.OfFunctionCallOutput.CallID = openai.String(callID)
	s := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: model, Tools: tools, PreviousResponseID: openai.String(r1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{fco}},
	})
	var r2 string
	var id2 string
	for s.Next() {
		if ev := s.Current(); ev.Type == "response.completed" {
			r2, id2 = ev.Response.RawJSON(), ev.Response.ID
		}
	}
	if err := s.Err(); err != nil || r2 == "" {
		t.Fatalf("turn 2 stream: %v (completed: %v)", err, r2 != "")
	}
	if types := outputs(r2); !slices.Contains(types, "message") {
		t.Fatalf("turn 2 output %v, want a message:\n%s", types, r2)
	}

	// Turn 3 (non-stream): a text turn after the final answer.
	const thanks = "Thanks! And in one word?"
	addTurn(mustJSON(t, map[string]any{"role": "user", "content": thanks}))
	r3, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: model, Tools: tools, PreviousResponseID: openai.String(id2),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(thanks)},
	})
	if err != nil {
		t.Fatalf("turn 3: %v", err)
	}
	// The scripted model may answer or call the tool again (tools are still offered): either way
	// the prompt is what matters, with turn 2's analysis dropped after its final answer.
	if types := outputs(r3.RawJSON()); len(types) == 0 {
		t.Fatalf("turn 3: no output:\n%s", r3.RawJSON())
	}

	// Turn 4 (non-stream): tool_choice names get_weather, so the call is forced in Harmony's
	// format (the prompt ends with the call header; the model writes the arguments).
	const again = "And in London?"
	var in4 []json.RawMessage
	var in4p responses.ResponseInputParam
	for _, it := range gjson.Get(r3.RawJSON(), "output").Array() { // turn 3 may have called the tool
		if it.Get("type").Str == "function_call" {
			in4 = append(in4, mustJSON(t, map[string]any{"type": "function_call_output", "call_id": it.Get("call_id").Str, "output": weatherOutput}))
			o := responses.ResponseInputItemParamOfFunctionCallOutput(weatherOutput)
			o.OfFunctionCallOutput.CallID = openai.String(it.Get("call_id").Str)
			in4p = append(in4p, o)
		}
	}
	in4 = append(in4, mustJSON(t, map[string]any{"role": "user", "content": again}))
	in4p = append(in4p, responses.ResponseInputItemParamOfMessage(again, responses.EasyInputMessageRoleUser))
	addTurn(in4...)
	r4, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: model, Tools: tools, PreviousResponseID: openai.String(r3.ID),
		Input:      responses.ResponseNewParamsInputUnion{OfInputItemList: in4p},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}},
	})
	if err != nil {
		t.Fatalf("turn 4: %v", err)
	}
	if types := outputs(r4.RawJSON()); !slices.Equal(types, []string{"function_call"}) || gjson.Get(r4.RawJSON(), "output.0.name").Str != "get_weather" {
		t.Fatalf("turn 4 (forced get_weather): output %v:\n%s", types, r4.RawJSON())
	}
	forced := tokenize(t, ctx, st.bin, dir, "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>")

	// Turn 5 (non-stream): the forced call's output; in exact mode its history holds the forced
	// ids as generated.
	out5 := mustJSON(t, map[string]any{"type": "function_call_output", "call_id": gjson.Get(r4.RawJSON(), "output.0.call_id").Str, "output": weatherOutput})
	addTurn(out5)
	fco5 := responses.ResponseInputItemParamOfFunctionCallOutput(weatherOutput)
	fco5.OfFunctionCallOutput.CallID = openai.String(gjson.Get(r4.RawJSON(), "output.0.call_id").Str)
	r5, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: model, Tools: tools, PreviousResponseID: openai.String(r4.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{fco5}},
	})
	if err != nil {
		t.Fatalf("turn 5: %v", err)
	}
	if types := outputs(r5.RawJSON()); !slices.Contains(types, "message") {
		t.Fatalf("turn 5 output %v, want a message:\n%s", types, r5.RawJSON())
	}

	// The reference render of each turn's conversation.
	want := renderResponses(t, ctx, st.bin, dir, bodies)
	got, gen := recordedGenerations(t, rec)
	if len(got) != len(want) {
		t.Fatalf("sim recorded %d prompts, want %d", len(got), len(want))
	}
	if mode == "canonical" {
		// vLLM continues from the Harmony messages it parsed (its message store), so an earlier
		// call keeps the content type the model wrote (the sim writes `<|constrain|>json`, as
		// gpt-oss does; the forced header too), where the items path writes ` json`.
		items := tokenize(t, ctx, st.bin, dir, "<|channel|>commentary json<|message|>")
		generated := tokenize(t, ctx, st.bin, dir, "<|channel|>commentary <|constrain|>json<|message|>")
		for i := range want {
			want[i] = replaceIDs(want[i], items, generated)
		}
	}
	want[3] = append(want[3], forced...) // the forced call header follows the prompt
	if mode == "exact" {
		// The new turn of turn i+1 is the tail of its full render after the render of turn i's
		// conversation (its input and output; the same render less its "<|start|>assistant").
		outs := renderResponses(t, ctx, st.bin, dir, prevBodies)
		for i := 1; i < len(want); i++ {
			prevConv := outs[i-1][:len(outs[i-1])-2]
			if !slices.Equal(want[i][:len(prevConv)], prevConv) {
				t.Fatalf("turn %d: the full render does not start with turn %d's conversation", i+1, i)
			}
			history := append(slices.Clone(got[i-1]), gen[i-1]...)
			if history[len(history)-1] == 200002 { // <|return|> is <|end|> in history
				history[len(history)-1] = 200007
			}
			want[i] = append(history, want[i][len(prevConv):]...)
		}
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("%s turn %d: prompt (%d ids) differs from the reference (%d ids) at %d", mode, i+1, len(got[i]), len(want[i]), firstDiffIDs(got[i], want[i]))
		}
	}
	outcomes := scrapeOutcomes(t, serve.addr)
	if outcomes["hit_local"] != 4 {
		t.Errorf("%s: artifact outcomes %v, want 4 hit_local continuations", mode, outcomes)
	}
}

// replaceIDs replaces every occurrence of old in ids with new.
func replaceIDs(ids, old, new []uint32) []uint32 {
	var out []uint32
	for i := 0; i < len(ids); {
		if len(old) > 0 && i+len(old) <= len(ids) && slices.Equal(ids[i:i+len(old)], old) {
			out = append(out, new...)
			i += len(old)
			continue
		}
		out = append(out, ids[i])
		i++
	}
	return out
}

// renderResponses runs `stitch render --responses` on Responses bodies (one prompt each).
func renderResponses(t *testing.T, ctx context.Context, bin, dir string, bodies [][]byte) [][]uint32 {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, "render", "--responses", "--model-dir", dir, "--tool-call-parser", "openai", "--start-date", gptossStartDate)
	cmd.Stdin = bytes.NewReader(append(bytes.Join(bodies, []byte("\n")), '\n'))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ref, err := cmd.Output()
	if err != nil {
		t.Fatalf("stitch render --responses: %v\n%s", err, stderr.String())
	}
	var out [][]uint32
	for _, line := range strings.Split(strings.TrimSpace(string(ref)), "\n") {
		var o struct {
			Tokens []uint32 `json:"tokens"`
		}
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("render output %q: %v", line, err)
		}
		out = append(out, o.Tokens)
	}
	return out
}

// recordedGenerations reads the sim's record file: the prompt and output ids of each
// generation, skipping serve's one-token startup probe.
func recordedGenerations(t *testing.T, path string) (prompts, outputs [][]uint32) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r struct {
			Prompt []uint32 `json:"prompt_token_ids"`
			Output []uint32 `json:"output_token_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record line: %v", err)
		}
		if len(r.Prompt) > 1 {
			prompts, outputs = append(prompts, r.Prompt), append(outputs, r.Output)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return prompts, outputs
}

// recordedPrompts is recordedGenerations' prompts.
func recordedPrompts(t *testing.T, path string) [][]uint32 {
	t.Helper()
	prompts, _ := recordedGenerations(t, path)
	return prompts
}

// tokenize runs `stitch tokenize` on one text (marker strings become their tokens).
func tokenize(t *testing.T, ctx context.Context, bin, dir, text string) []uint32 {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, "tokenize", "--model-dir", dir)
	cmd.Stdin = strings.NewReader(string(mustJSON(t, text)) + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("stitch tokenize: %v", err)
	}
	var ids []uint32
	if err := json.Unmarshal(out, &ids); err != nil {
		t.Fatalf("stitch tokenize output %q: %v", out, err)
	}
	return ids
}

// scrapeOutcomes reads stitch_artifact_resolutions_total by outcome from a serve's /metrics.
func scrapeOutcomes(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, `stitch_artifact_resolutions_total{outcome="`)
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(rest, `"} `)
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err == nil {
			out[k] = f
		}
	}
	return out
}

func firstDiffIDs(a, b []uint32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
