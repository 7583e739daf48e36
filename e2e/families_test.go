package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/internal/synthmodel"
)

// familyCase is one row of the README's families table, served as a profile: a model directory
// (or a stand-in for the families without a tokenizer offline, internal/synthmodel), a chat
// template, and vLLM's parser names.
type familyCase struct {
	name      string
	dir       string // testdata/models/<dir>; "" with standIn
	standIn   string // internal/synthmodel family (testdata/render/<standIn>.jinja over Qwen3's vocabulary)
	template  string // --chat-template under testdata/render; "" for the directory's own
	parser    string
	reasoning string
	thinking  bool // the family switches reasoning with reasoning.effort (on/off subtests)
}

var familyCases = []familyCase{
	{name: "hermes+qwen3", dir: "qwen3", parser: "hermes", reasoning: "qwen3", thinking: true},
	{name: "hermes", dir: "qwen2_5", parser: "hermes"},
	{name: "qwen3_coder", dir: "qwen3", template: "qwen3/qwen3-coder.jinja", parser: "qwen3_coder"},
	{name: "llama3_json", dir: "llama3_2", template: "llama3/llama-3.1.jinja", parser: "llama3_json"},
	{name: "pythonic", dir: "llama3_2", parser: "pythonic"},
	{name: "mistral", dir: "mistral_nemo", parser: "mistral"},
	{name: "deepseek_v3", dir: "deepseek_v3", template: "deepseek_v3/vllm-tool-deepseekv3.jinja", parser: "deepseek_v3"},
	{name: "deepseek_v31", dir: "deepseek_v3", template: "deepseek_v3/vllm-tool-deepseekv31.jinja", parser: "deepseek_v31"},
	{name: "kimi_k2+kimi_k2", standIn: "kimi_k2/kimi-k2", parser: "kimi_k2", reasoning: "kimi_k2", thinking: true},
	{name: "glm45+glm45", standIn: "glm4/glm-4.6", parser: "glm45", reasoning: "glm45", thinking: true},
	{name: "glm47+glm45", standIn: "glm4/glm-4.7-flash", parser: "glm47", reasoning: "glm45", thinking: true},
}

// famModel is the served model name of every family stack.
const famModel = "fam"

// TestFamilies is the families matrix (issue 16 item 8): per family, `stitch sim` speaking the
// family's format behind two `stitch serve`s of the same profile, one with artifacts (canonical
// mode) and one with --no-artifacts; the same client script runs against each — the Go SDK
// (stream and non-stream × tool round trip, parallel calls, reasoning on/off where the family
// switches it, tool_choice required and named, a malformed call) then the Node SDK
// (e2e/node/families.mjs). The prompts the sim recorded for the two serves (told apart by their
// cache_salt: each serve seals with its own key) must be the same ids in the same order, with the
// same prefix-cache hit ratio.
func TestFamilies(t *testing.T) {
	st := requireStack(t)
	if st.bin == "" {
		t.Skip("external stack: no binary to start family stacks with")
	}
	node := nodeIfInstalled(t)
	for _, fc := range familyCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			runFamily(t, st, node, fc)
		})
	}
}

// nodeIfInstalled returns the node binary when the e2e Node clients are installed, else "" (the
// Node half of the matrix is then skipped, as TestNode skips; under CI=true it fails).
func nodeIfInstalled(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join("node", "node_modules", "openai"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("families matrix needs node and e2e/node/node_modules: %v", err)
		}
		t.Logf("Node half of the families matrix skipped: %v", err)
		return ""
	}
	return node
}

func runFamily(t *testing.T, st *stack, node string, fc familyCase) {
	dir := fc.dir
	if fc.standIn != "" {
		dir = t.TempDir()
		if err := synthmodel.WriteFamily(dir, filepath.Join("..", "testdata", "models", "qwen3", "tokenizer.json"),
			filepath.Join("..", "testdata", "render"), fc.standIn); err != nil {
			t.Fatal(err)
		}
	} else {
		dir = filepath.Join("..", "testdata", "models", dir)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	profile := []string{"--model-dir", dir, "--served-model-name", famModel, "--tool-call-parser", fc.parser}
	if fc.reasoning != "" {
		profile = append(profile, "--reasoning-parser", fc.reasoning)
	}
	procs := newExtraProcs(t)
	rec := filepath.Join(t.TempDir(), "record.jsonl")
	sim := procs.start(fc.name+" sim", func() (*proc, error) {
		return startReady(st.bin, "sim", "/health", func(addr string) []string {
			return append([]string{"sim", "--listen", addr, "--fast", "--record", rec}, profile...)
		})
	})
	serveArgs := slices.Clone(profile)
	if fc.template != "" {
		tmpl, err := filepath.Abs(filepath.Join("..", "testdata", "render", fc.template))
		if err != nil {
			t.Fatal(err)
		}
		serveArgs = append(serveArgs, "--chat-template", tmpl)
	}
	startServe := func(what string, extra ...string) *proc {
		data := t.TempDir()
		return procs.start(fc.name+" "+what, func() (*proc, error) {
			return startReady(st.bin, "serve", "/readyz", func(addr string) []string {
				args := append([]string{"serve", "--listen", addr, "--upstream", "http://" + sim.addr, "--data-dir", data}, serveArgs...)
				return append(args, extra...)
			})
		})
	}
	withArtifacts := startServe("serve")
	baseline := startServe("serve --no-artifacts", "--no-artifacts")

	requests := 0
	for _, s := range []struct {
		name string
		p    *proc
	}{{"artifacts", withArtifacts}, {"no-artifacts", baseline}} {
		t.Run(s.name, func(t *testing.T) {
			requests = familyGoMatrix(t, newClient("http://"+s.p.addr), fc)
			if node != "" {
				requests += familyNode(t, node, "http://"+s.p.addr, fc)
			}
		})
	}
	if t.Failed() {
		return
	}
	a, b := familyRecords(t, rec, requests)
	if len(a) != len(b) || len(a) < requests {
		t.Fatalf("the sim recorded %d prompts through the artifacts serve and %d through --no-artifacts; the script sends %d", len(a), len(b), requests)
	}
	var cachedA, cachedB, total int
	for i := range a {
		if !slices.Equal(a[i].ids, b[i].ids) {
			t.Errorf("prompt %d differs from the --no-artifacts run (%d vs %d ids, first difference at %d)", i, len(a[i].ids), len(b[i].ids), firstDiff(a[i].ids, b[i].ids))
		}
		cachedA += a[i].cached
		cachedB += b[i].cached
		total += len(a[i].ids)
	}
	if cachedA != cachedB {
		t.Errorf("prefix-cache hits: %d of %d prompt tokens with artifacts, %d with --no-artifacts", cachedA, total, cachedB)
	}
	t.Logf("%d prompts, %d tokens, hit ratio %.3f (both runs)", len(a), total, float64(cachedA)/float64(max(total, 1)))
}

// familyRecord is one record line of the sim.
type familyRecord struct {
	ids    []uint32
	cached int
}

// recordedPrompts reads the sim's record (waiting until it holds want prompts per serve) and
// splits it by cache_salt, in order of appearance: the artifacts serve's first.
func familyRecords(t *testing.T, path string, want int) (a, b []familyRecord) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		bySalt := map[string][]familyRecord{}
		var order []string
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			line := sc.Bytes()
			salt := gjson.GetBytes(line, "cache_salt")
			if salt.Type != gjson.String || gjson.GetBytes(line, "endpoint").Str != "/v1/completions" {
				continue // serve's startup probe, or a pass-through
			}
			var rp familyRecord
			for _, v := range gjson.GetBytes(line, "prompt_token_ids").Array() {
				rp.ids = append(rp.ids, uint32(v.Uint()))
			}
			rp.cached = int(gjson.GetBytes(line, "cached_tokens").Int())
			if _, ok := bySalt[salt.Str]; !ok {
				order = append(order, salt.Str)
			}
			bySalt[salt.Str] = append(bySalt[salt.Str], rp)
		}
		if len(order) == 2 && len(bySalt[order[0]]) >= want && len(bySalt[order[1]]) >= want || time.Now().After(deadline) {
			if len(order) != 2 {
				t.Fatalf("the sim recorded prompts under %d cache salts, want 2 (one per serve)", len(order))
			}
			return bySalt[order[0]], bySalt[order[1]]
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func firstDiff(a, b []uint32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// familyTools are get_weather and get_time, with descriptions (DeepSeek V3.1's tool template
// concatenates the description: a tool without one makes it raise, in vLLM as here).
func familyTools() []responses.ToolUnionParam {
	fn := func(name, desc, param string) responses.ToolUnionParam {
		tl := responses.ToolParamOfFunction(name, map[string]any{
			"type":                 "object",
			"properties":           map[string]any{param: map[string]any{"type": "string"}},
			"required":             []string{param},
			"additionalProperties": false,
		}, true)
		tl.OfFunction.Description = openai.String(desc)
		return tl
	}
	return []responses.ToolUnionParam{fn("get_weather", "Weather of a city.", "location"), fn("get_time", "Time in a time zone.", "tz")}
}

const (
	famAskWeather = "What is the weather in Paris? Use get_weather."
	famParallel   = "Weather and time for Paris: call get_weather and get_time in parallel."
	famMalformed  = "What is the weather in Paris? Use get_weather. This is a malformed call."
)

// famTurn is one finished response as the matrix reads it.
type famTurn struct {
	id, status, reason string
	items              []gjson.Result
}

func (r famTurn) types() []string {
	var out []string
	for _, it := range r.items {
		out = append(out, it.Get("type").Str)
	}
	return out
}

func (r famTurn) calls() []gjson.Result {
	var out []gjson.Result
	for _, it := range r.items {
		if it.Get("type").Str == "function_call" {
			out = append(out, it)
		}
	}
	return out
}

func famTurnOf(raw string) famTurn {
	v := gjson.Parse(raw)
	return famTurn{id: v.Get("id").Str, status: v.Get("status").Str, reason: v.Get("incomplete_details.reason").Str, items: v.Get("output").Array()}
}

// famCreate sends params with the Go SDK, streamed or not, and returns the final response. A
// stream must end in response.completed or response.incomplete, its event order checked by the
// SDK's decoding and the sequence numbers here.
func famCreate(t *testing.T, c openai.Client, params responses.ResponseNewParams, stream bool) famTurn {
	t.Helper()
	ctx := testContext(t)
	if !stream {
		r, err := c.Responses.New(ctx, params)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		return famTurnOf(r.RawJSON())
	}
	s := c.Responses.NewStreaming(ctx, params)
	var final string
	seq := int64(0)
	for s.Next() {
		ev := s.Current()
		if ev.SequenceNumber != seq {
			t.Errorf("event %s: sequence_number %d, want %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq++
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed":
			final = ev.Response.RawJSON()
		}
	}
	if err := s.Err(); err != nil || final == "" {
		t.Fatalf("stream: %v (terminal event seen: %v)", err, final != "")
	}
	return famTurnOf(final)
}

// familyGoMatrix runs the Go SDK half of the matrix against one serve and returns the number of
// generations it asked for.
func familyGoMatrix(t *testing.T, c openai.Client, fc familyCase) int {
	tools := familyTools()
	input := func(s string) responses.ResponseNewParamsInputUnion {
		return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
	}
	n := 0
	for _, stream := range []bool{false, true} {
		mode := map[bool]string{false: "non-stream", true: "stream"}[stream]
		create := func(t *testing.T, p responses.ResponseNewParams) famTurn {
			n++
			p.Model = famModel
			return famCreate(t, c, p, stream)
		}
		t.Run(mode+"/tool_round_trip", func(t *testing.T) {
			r1 := create(t, responses.ResponseNewParams{Tools: tools, Input: input(famAskWeather)})
			calls := r1.calls()
			if r1.status != "completed" || len(calls) != 1 || calls[0].Get("name").Str != "get_weather" || !gjson.Valid(calls[0].Get("arguments").Str) {
				t.Fatalf("turn 1: status %s, output %v: want one get_weather call", r1.status, r1.types())
			}
			fco := responses.ResponseInputItemParamOfFunctionCallOutput(weatherOutput)
			fco.OfFunctionCallOutput.CallID = openai.String(calls[0].Get("call_id").Str)
			r2 := create(t, responses.ResponseNewParams{Tools: tools, PreviousResponseID: openai.String(r1.id),
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{fco}}})
			if r2.status != "completed" || !slices.Contains(r2.types(), "message") || !strings.Contains(r2.raw(), "sunny") {
				t.Fatalf("turn 2: status %s, output %v: want a message quoting the tool output", r2.status, r2.types())
			}
		})
		t.Run(mode+"/parallel_calls", func(t *testing.T) {
			r := create(t, responses.ResponseNewParams{Tools: tools, Input: input(famParallel)})
			var names []string
			for _, c := range r.calls() {
				names = append(names, c.Get("name").Str)
			}
			if r.status != "completed" || !slices.Equal(names, []string{"get_weather", "get_time"}) {
				t.Fatalf("status %s, calls %v: want get_weather and get_time", r.status, names)
			}
			ids := map[string]bool{}
			for _, c := range r.calls() {
				ids[c.Get("call_id").Str] = true
			}
			if len(ids) != 2 {
				t.Errorf("call ids not unique: %v", ids)
			}
		})
		if fc.thinking {
			for _, on := range []bool{true, false} {
				effort := map[bool]string{true: "low", false: "none"}[on]
				t.Run(mode+"/reasoning_"+effort, func(t *testing.T) {
					r := create(t, responses.ResponseNewParams{Input: input("Say hello."),
						Reasoning: openai.ReasoningParam{Effort: openai.ReasoningEffort(effort)}})
					if got := slices.Contains(r.types(), "reasoning"); r.status != "completed" || got != on {
						t.Fatalf("effort %s: status %s, output %v (reasoning %v, want %v)", effort, r.status, r.types(), got, on)
					}
				})
			}
		}
		t.Run(mode+"/tool_choice_required", func(t *testing.T) {
			r := create(t, responses.ResponseNewParams{Tools: tools, Input: input("Hello there."),
				ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)}})
			if calls := r.calls(); r.status != "completed" || len(calls) == 0 || !gjson.Valid(calls[0].Get("arguments").Str) {
				t.Fatalf("status %s, output %v: want a call", r.status, r.types())
			}
		})
		t.Run(mode+"/tool_choice_named", func(t *testing.T) {
			r := create(t, responses.ResponseNewParams{Tools: tools, Input: input(famAskWeather),
				ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_time"}}})
			calls := r.calls()
			if r.status != "completed" || len(calls) != 1 || calls[0].Get("name").Str != "get_time" || !gjson.Valid(calls[0].Get("arguments").Str) {
				t.Fatalf("status %s, output %v: want one get_time call", r.status, r.types())
			}
		})
		t.Run(mode+"/malformed_call", func(t *testing.T) {
			r := create(t, responses.ResponseNewParams{Tools: tools, Input: input(famMalformed)})
			calls := r.calls()
			if r.status != "incomplete" || r.reason != "malformed_tool_call" || len(calls) != 1 || calls[0].Get("status").Str != "incomplete" {
				t.Fatalf("status %s (%s), output %s: want incomplete with one incomplete call", r.status, r.reason, r.raw())
			}
			for _, it := range r.items {
				if it.Get("type").Str == "message" && strings.Contains(it.Raw, "get_weather") {
					t.Errorf("the broken call leaked into message text: %s", it.Raw)
				}
			}
		})
	}
	return n
}

func (r famTurn) raw() string {
	var b strings.Builder
	for _, it := range r.items {
		b.WriteString(it.Raw)
	}
	return b.String()
}

// familyNode runs e2e/node/families.mjs (the Node SDK half) against one serve and returns the
// number of generations it asked for (its last stdout line "generations N").
func familyNode(t *testing.T, node, baseURL string, fc familyCase) int {
	t.Helper()
	ctx := testContext(t)
	cmd := exec.CommandContext(ctx, node, "families.mjs")
	cmd.Dir = "node"
	cmd.Env = append(withoutOpenAIEnv(os.Environ()), "OPENAI_BASE_URL="+baseURL+"/v1", "OPENAI_API_KEY="+apiKey,
		"STITCH_MODEL="+famModel, fmt.Sprintf("STITCH_THINKING=%v", fc.thinking))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	n := 0
	for line := range strings.Lines(stdout.String()) {
		if _, e := fmt.Sscanf(line, "generations %d", &n); e == nil {
			continue
		}
		t.Log(strings.TrimRight(line, "\n"))
	}
	if err != nil {
		t.Fatalf("node families.mjs: %v\nstderr:\n%s", err, stderr.String())
	}
	return n
}
