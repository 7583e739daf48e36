package sim_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stream"
)

// familyModels loads each testdata model directory once (tokenizer.json or its .gz).
var familyModels sync.Map // dir -> *render.Renderer

func loadFamily(t *testing.T, name string) *render.Renderer {
	t.Helper()
	if m, ok := familyModels.Load(name); ok {
		return m.(*render.Renderer)
	}
	src := filepath.Join("../testdata/models", name)
	dir := t.TempDir()
	for _, f := range []string{"tokenizer_config.json", "tokenizer.json"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if os.IsNotExist(err) && f == "tokenizer.json" {
			gz, gerr := os.ReadFile(filepath.Join(src, f+".gz"))
			if gerr != nil {
				t.Fatal(gerr)
			}
			zr, gerr := gzip.NewReader(bytes.NewReader(gz))
			if gerr != nil {
				t.Fatal(gerr)
			}
			data, err = io.ReadAll(zr)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := render.LoadModel(os.DirFS(dir), render.Options{})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	familyModels.Store(name, m)
	return m
}

const weatherTools = `[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
{"type":"function","function":{"name":"get_time","description":"Time","parameters":{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}}}]`

// TestFamilyAnswers runs each family's simulator through its own chat template: a tool call, two
// parallel calls, and the answer after a tool result, each in the family's format and ending in
// its end-of-turn token.
func TestFamilyAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model, parser, reasoning string
		chat                     bool // render with the model's template (else prompt is a raw completion prompt)
		prompt                   string
		call, parallel           []string // substrings of one call's and of a parallel turn's text
		end                      string   // the last token
	}{
		{model: "qwen2_5", parser: "hermes", chat: true,
			call:     []string{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
			parallel: []string{"</tool_call>\n<tool_call>\n{\"name\": \"get_time\""}, end: "<|im_end|>"},
		{model: "qwen3", parser: "qwen3_coder", reasoning: "qwen3", chat: true,
			call:     []string{"<think>\n", "\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"},
			parallel: []string{"<function=get_weather>", "</tool_call>\n<tool_call>\n<function=get_time>"}, end: "<|im_end|>"},
		{model: "llama3_2", parser: "llama3_json", chat: true,
			call:     []string{`{"name": "get_weather", "parameters": {"city": "Paris"}}`},
			parallel: []string{`}}; {"name": "get_time", "parameters": {"tz": `}, end: "<|eot_id|>"},
		{model: "llama3_2", parser: "pythonic", chat: true,
			call:     []string{`[get_weather(city="Paris")]`},
			parallel: []string{`[get_weather(city="`, `"), get_time(tz="`}, end: "<|eot_id|>"},
		{model: "mistral_nemo", parser: "mistral", chat: true,
			call:     []string{`[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "`},
			parallel: []string{`"}, {"name": "get_time"`}, end: "</s>"},
		// DeepSeek's official template renders no tools: the prompt carries them as vLLM's tool
		// templates do, as JSON in the system part.
		{model: "deepseek_v3", parser: "deepseek_v3",
			prompt:   "<｜begin▁of▁sentence｜>Tools: " + compact(weatherTools) + "<｜User｜>%s<｜Assistant｜>",
			call:     []string{"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
			parallel: []string{"```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time"}, end: "<｜end▁of▁sentence｜>"},
		// Gemma 3's official template renders no tools either: vLLM's pythonic tool template
		// writes them as JSON at the start of the first user turn.
		{model: "gemma3", parser: "pythonic",
			prompt:   "<bos><start_of_turn>user\nHere is a list of functions in JSON format that you can invoke.\n" + compact(weatherTools) + "\n\n%s<end_of_turn>\n<start_of_turn>model\n",
			call:     []string{`[get_weather(city="Paris")]`},
			parallel: []string{`[get_weather(city="`, `"), get_time(tz="`}, end: "<end_of_turn>"},
		{model: "deepseek_v3", parser: "deepseek_v31",
			prompt:   "<｜begin▁of▁sentence｜>Tools: " + compact(weatherTools) + "<｜User｜>%s<｜Assistant｜>",
			call:     []string{"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
			parallel: []string{"<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>"}, end: "<｜end▁of▁sentence｜>"},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.parser, func(t *testing.T) {
			t.Parallel()
			m := loadFamily(t, tt.model)
			_, ts := newTestServer(t, sim.Options{Tokenizer: m.Tokenizer(), Renderer: sim.ModelRenderer(m),
				ToolCallParser: tt.parser, ReasoningParser: tt.reasoning, MaxModelLen: 8192})
			endID, _ := m.Tokenizer().TokenID(tt.end)
			ask := func(user string, extra ...map[string]any) (string, []uint32) {
				t.Helper()
				var status int
				var out []byte
				if tt.chat {
					msgs := []map[string]any{{"role": "user", "content": user}}
					msgs = append(msgs, extra...)
					status, out = post(t, ts.URL+"/v1/chat/completions", map[string]any{"messages": msgs,
						"tools": json.RawMessage(weatherTools), "skip_special_tokens": false, "return_token_ids": true, "max_tokens": 600})
				} else {
					status, out = post(t, ts.URL+"/v1/completions", map[string]any{"prompt": strings.Replace(tt.prompt, "%s", user, 1),
						"skip_special_tokens": false, "return_token_ids": true, "max_tokens": 600})
				}
				if status != 200 {
					t.Fatalf("status %d: %s", status, out)
				}
				var r struct {
					Choices []struct {
						Text     string   `json:"text"`
						TokenIDs []uint32 `json:"token_ids"`
						Message  struct {
							Content string `json:"content"`
						} `json:"message"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(out, &r); err != nil {
					t.Fatal(err)
				}
				c := r.Choices[0]
				return c.Text + c.Message.Content, c.TokenIDs
			}
			if tt.chat {
				text, ids := ask("What is the weather in Paris? Use get_weather.",
					map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{{"id": "abcdefghi", "type": "function",
						"function": map[string]any{"name": "get_weather", "arguments": `{"city": "Paris"}`}}}},
					map[string]any{"role": "tool", "tool_call_id": "abcdefghi", "content": "sunny 20C"})
				if !strings.Contains(text, "The tool returned: ") || !strings.Contains(text, "sunny 20C") || ids[len(ids)-1] != endID {
					t.Errorf("after a tool result: %q", text)
				}
			}
			for _, q := range []struct {
				user string
				want []string
			}{
				{"What is the weather in Paris? Use get_weather.", tt.call},
				{"Paris weather and the time: call get_weather and get_time in parallel.", tt.parallel},
			} {
				text, ids := ask(q.user)
				for _, w := range q.want {
					if !strings.Contains(text, w) {
						t.Errorf("%q: answer lacks %q:\n%s", q.user, w, text)
					}
				}
				if len(ids) == 0 || ids[len(ids)-1] != endID {
					t.Errorf("%q: last id %v, want %s (%d)", q.user, ids[len(ids)-1:], tt.end, endID)
				}
				// Markers are single special tokens, never spelled out as text.
				if enc := m.Tokenizer().Encode(text); len(enc) != len(ids)-1 {
					t.Errorf("%q: answer re-encodes to %d ids, generated %d (markers split into text?)", q.user, len(enc), len(ids)-1)
				}
			}
			// "malformed call": the family's own parser sees a call that began and broke.
			_, ids := ask("What is the weather in Paris? Use get_weather. This is a malformed call.")
			fam, err := family.New(family.Names{ToolCallParser: tt.parser, ReasoningParser: tt.reasoning},
				family.Vocabulary{TokenID: m.Tokenizer().TokenID, StopTokenIDs: m.StopTokenIDs})
			if err != nil {
				t.Fatal(err)
			}
			p := fam.NewParser(m.Tokenizer().NewDecodeStream(), family.Turn{ParallelToolCalls: true})
			var pieces []stream.Piece
			for _, id := range ids {
				pieces = p.Append(pieces, id)
			}
			pieces = p.Finish(pieces)
			broken := 0
			for _, pc := range pieces {
				if pc.Kind == stream.PieceToolCallDone && pc.Incomplete {
					broken++
				}
				if pc.Kind == stream.PieceText && strings.Contains(pc.Text, "get_weather") {
					t.Errorf("malformed call: the call became message text %q", pc.Text)
				}
			}
			if broken != 1 {
				t.Errorf("malformed call: %d incomplete calls in %+v, want 1", broken, pieces)
			}
		})
	}
}

func compact(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic(err)
	}
	return b.String()
}

// TestFamilyRefused: a parser whose markers the model's tokenizer lacks is refused at startup.
func TestFamilyRefused(t *testing.T) {
	t.Parallel()
	m := loadFamily(t, "llama3_2")
	_, err := sim.New(sim.Options{Tokenizer: m.Tokenizer(), ToolCallParser: "mistral"})
	if err == nil || !strings.Contains(err.Error(), "[TOOL_CALLS]") {
		t.Fatalf("mistral on a Llama 3 tokenizer: err %v, want one naming [TOOL_CALLS]", err)
	}
}
