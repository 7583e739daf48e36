package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// serve with --tool-call-parser openai) with the Go SDK: a tool round trip (non-stream call,
// streamed final answer) then a text turn, reasoning items present; every prompt the sim
// received equals `stitch render --responses` of the whole conversation so far.
func TestGPTOSS(t *testing.T) {
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack: no binary to start a gpt-oss stack with")
	}
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
			return append([]string{"serve", "--listen", addr, "--upstream", "http://" + sim.addr, "--data-dir", data}, family...)
		})
	})
	c := newClient("http://" + serve.addr)
	ctx := testContext(t)
	tools := []responses.ToolUnionParam{weatherTool()}
	toolsJSON := json.RawMessage(mustJSON(t, tools))

	var conv []json.RawMessage // the whole conversation, as the reference renders it
	var bodies [][]byte        // one reference request per turn
	addTurn := func(input ...json.RawMessage) {
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

	// The prompts the sim received equal the reference render of each turn's conversation.
	cmd := exec.CommandContext(ctx, st.bin, "render", "--responses", "--model-dir", dir, "--tool-call-parser", "openai", "--start-date", gptossStartDate)
	cmd.Stdin = bytes.NewReader(append(bytes.Join(bodies, []byte("\n")), '\n'))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ref, err := cmd.Output()
	if err != nil {
		t.Fatalf("stitch render --responses: %v\n%s", err, stderr.String())
	}
	var want [][]uint32
	for _, line := range strings.Split(strings.TrimSpace(string(ref)), "\n") {
		var o struct {
			Tokens []uint32 `json:"tokens"`
		}
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("render output %q: %v", line, err)
		}
		want = append(want, o.Tokens)
	}
	got := recordedPrompts(t, rec)
	if len(got) != len(want) {
		t.Fatalf("sim recorded %d prompts, want %d", len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("turn %d: prompt (%d ids) differs from stitch render --responses (%d ids) at %d", i+1, len(got[i]), len(want[i]), firstDiffIDs(got[i], want[i]))
		}
	}
}

// recordedPrompts reads the sim's record file: the prompt ids of each generation, skipping
// serve's one-token startup probe.
func recordedPrompts(t *testing.T, path string) [][]uint32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]uint32
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r struct {
			Prompt []uint32 `json:"prompt_token_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record line: %v", err)
		}
		if len(r.Prompt) > 1 {
			out = append(out, r.Prompt)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
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
