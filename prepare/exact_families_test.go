package prepare_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/internal/synthmodel"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/store"
)

// loadModelDir loads testdata/models/name (tokenizer.json or its .gz), with the chat template
// testdata/render/template when it is not "".
func loadModelDir(t *testing.T, name, template string) *render.Renderer {
	t.Helper()
	src, dir := filepath.Join("..", "testdata", "models", name), t.TempDir()
	for _, f := range []string{"tokenizer_config.json", "tokenizer.json"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if os.IsNotExist(err) && f == "tokenizer.json" {
			var gz []byte
			if gz, err = os.ReadFile(filepath.Join(src, f+".gz")); err == nil {
				var zr *gzip.Reader
				if zr, err = gzip.NewReader(bytes.NewReader(gz)); err == nil {
					data, err = io.ReadAll(zr)
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var opts render.Options
	if template != "" {
		text, err := os.ReadFile(filepath.Join("..", "testdata", "render", template))
		if err != nil {
			t.Fatal(err)
		}
		opts.ChatTemplate = string(text)
	}
	m, err := render.LoadModel(os.DirFS(dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestExactFamilies: exact mode over each family's template and turn structure — a tool call
// (as the family writes it, ending in its stop token) then the tool's output, then a text answer
// then a user message. Each continuation reuses the whole frozen history (prompt and generated
// ids) and ends with the full render's text of the new input; none falls back to a full render.
// (Mistral and DeepSeek close only assistant messages with their end-of-turn token: the new input
// closes none, family.InputsUnclosed.)
func TestExactFamilies(t *testing.T) {
	const (
		eot = "<|eot_id|>"
		dsE = "<｜end▁of▁sentence｜>"
	)
	tests := []struct {
		name, dir, standIn, template string
		names                        family.Names
		call, answer                 string // generated, stop token included
	}{
		{name: "hermes", dir: "qwen2_5", names: family.Names{ToolCallParser: "hermes"},
			call:   "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>",
			answer: "It is sunny.<|im_end|>"},
		{name: "qwen3_coder", dir: "qwen3", template: "qwen3/qwen3-coder.jinja", names: family.Names{ToolCallParser: "qwen3_coder"},
			call:   "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call><|im_end|>",
			answer: "It is sunny.<|im_end|>"},
		{name: "llama3_json", dir: "llama3_2", template: "llama3/llama-3.1.jinja", names: family.Names{ToolCallParser: "llama3_json"},
			call: `{"name": "get_weather", "parameters": {"city": "Paris"}}` + eot, answer: "It is sunny." + eot},
		{name: "pythonic", dir: "llama3_2", names: family.Names{ToolCallParser: "pythonic"},
			call: `[get_weather(city="Paris")]` + eot, answer: "It is sunny." + eot},
		{name: "mistral", dir: "mistral_nemo", names: family.Names{ToolCallParser: "mistral"},
			call: `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}]</s>`, answer: "It is sunny.</s>"},
		{name: "deepseek_v3", dir: "deepseek_v3", template: "deepseek_v3/vllm-tool-deepseekv3.jinja", names: family.Names{ToolCallParser: "deepseek_v3"},
			call:   "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>" + dsE,
			answer: "It is sunny." + dsE},
		{name: "deepseek_v31", dir: "deepseek_v3", template: "deepseek_v3/vllm-tool-deepseekv31.jinja", names: family.Names{ToolCallParser: "deepseek_v31"},
			call:   "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>" + dsE,
			answer: "It is sunny." + dsE},
		{name: "kimi_k2", standIn: "kimi_k2/kimi-k2", names: family.Names{ToolCallParser: "kimi_k2"},
			call:   "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|><|im_end|>",
			answer: "It is sunny.<|im_end|>"},
		{name: "glm45", standIn: "glm4/glm-4.6", names: family.Names{ToolCallParser: "glm45", ReasoningParser: "glm45"},
			call:   "<think>Call it.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call><|observation|>",
			answer: "<think>Done.</think>\nIt is sunny.<|user|>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m *render.Renderer
			if tt.standIn != "" {
				dir := t.TempDir()
				if err := synthmodel.WriteFamily(dir, "../testdata/models/qwen3/tokenizer.json", "../testdata/render", tt.standIn); err != nil {
					t.Fatal(err)
				}
				var err error
				if m, err = render.LoadModel(os.DirFS(dir), render.Options{}); err != nil {
					t.Fatal(err)
				}
			} else {
				m = loadModelDir(t, tt.dir, tt.template)
			}
			env := newArtEnv(t, envOptions{mode: store.ModeExact, model: m, names: tt.names})
			in := &prepare.Input{Tenant: "t1", Tools: toolsPool[1], Items: []json.RawMessage{userItem("What's the weather in Paris?")}}
			p := env.prepareBoth(t.Context(), in)
			base := env.complete(t, in, p, generation{text: tt.call})
			if len(base.calls) != 1 {
				t.Fatalf("turn 1 parsed %d calls from %q", len(base.calls), tt.call)
			}
			env.persist(t.Context(), in, p, base.resp, append([]string{"in_1"}, base.resp.itemIDs...))
			check := func(what string, next *prepare.Input, prev *convNode, input string) *prepare.Prompt {
				t.Helper()
				got, err := env.prep.Prepare(t.Context(), next)
				if err != nil {
					t.Fatal(err)
				}
				frozen := len(prev.p.IDs) + len(prev.resp.generated)
				full, err := env.full.Prepare(t.Context(), next)
				if err != nil {
					t.Fatal(err)
				}
				tail := full.Text[strings.LastIndex(full.Text, input):]
				if got.Outcome == prepare.OutcomeDiverged || got.Reused < frozen || !strings.HasSuffix(m.Tokenizer().Decode(got.IDs), tail) {
					t.Errorf("%s: outcome %s, reused %d of %d frozen ids; the prompt should end with %q:\n…%q", what, got.Outcome, got.Reused, frozen,
						tail, tailOf(m.Tokenizer().Decode(got.IDs), 200))
				}
				return got
			}
			next := continuation(base, "")
			p2 := check("after the tool call", next, base, "temp")
			second := env.complete(t, next, p2, generation{text: tt.answer})
			env.persist(t.Context(), next, p2, second.resp, append(append([]string{"in_1"}, base.resp.itemIDs...), append([]string{"in_2"}, second.resp.itemIDs...)...))
			check("after the answer", continuation(second, "Thanks, bye."), second, "Thanks, bye.")
		})
	}
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
