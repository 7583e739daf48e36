package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

func TestLoadModelQwen3(t *testing.T) {
	m := qwen3(t)
	if want := []uint32{151645, 151643}; !slices.Equal(m.StopTokenIDs, want) {
		t.Errorf("StopTokenIDs = %v, want %v", m.StopTokenIDs, want)
	}
	if m.TokenizerDigest != "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4" {
		t.Errorf("TokenizerDigest = %s", m.TokenizerDigest)
	}
	if m.TemplateSource != "tokenizer_config.json" || m.TemplateDigest != DigestString(m.Template()) {
		t.Errorf("template source %q digest %s", m.TemplateSource, m.TemplateDigest)
	}
	var names []string
	for _, s := range m.specials {
		names = append(names, s.name)
	}
	if diff := cmp.Diff([]string{"eos_token", "pad_token", "additional_special_tokens"}, names); diff != "" {
		t.Errorf("special tokens (-want +got):\n%s", diff)
	}
}

func TestLoadModelTemplates(t *testing.T) {
	t.Parallel()
	dir := func(files map[string]string) fstest.MapFS {
		fsys := fstest.MapFS{}
		for k, v := range files {
			fsys[k] = &fstest.MapFile{Data: []byte(v)}
		}
		return fsys
	}
	tests := []struct {
		name       string
		fsys       fstest.MapFS
		opts       Options
		wantTmpl   string
		wantSource string
		wantErr    error
	}{
		{"string", dir(map[string]string{"tokenizer_config.json": `{"chat_template":"A","eos_token":{"content":"<|im_end|>","special":true}}`}), Options{}, "A", "tokenizer_config.json", nil},
		{"list default", dir(map[string]string{"tokenizer_config.json": `{"chat_template":[{"name":"tool_use","template":"T"},{"name":"default","template":"D"}]}`}), Options{}, "D", "tokenizer_config.json:default", nil},
		{"list named", dir(map[string]string{"tokenizer_config.json": `{"chat_template":[{"name":"tool_use","template":"T"},{"name":"default","template":"D"}]}`}), Options{TemplateName: "tool_use"}, "T", "tokenizer_config.json:tool_use", nil},
		{"list missing", dir(map[string]string{"tokenizer_config.json": `{"chat_template":[{"name":"x","template":"T"}]}`}), Options{}, "", "", ErrModelDir},
		{"jinja file wins", dir(map[string]string{"tokenizer_config.json": `{"chat_template":"A"}`, "chat_template.jinja": "J"}), Options{}, "J", "chat_template.jinja", nil},
		{"option wins", dir(map[string]string{"tokenizer_config.json": `{"chat_template":"A"}`, "chat_template.jinja": "J"}), Options{ChatTemplate: "O"}, "O", "options", nil},
		{"none", dir(map[string]string{"tokenizer_config.json": `{}`}), Options{}, "", "", ErrModelDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, source, err := pickTemplate(tt.fsys, gjson.ParseBytes(tt.fsys["tokenizer_config.json"].Data), tt.opts)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("LoadModel error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tmpl != tt.wantTmpl || source != tt.wantSource {
				t.Errorf("template %q from %q, want %q from %q", tmpl, source, tt.wantTmpl, tt.wantSource)
			}
		})
	}
}

func TestLoadModelErrors(t *testing.T) {
	t.Parallel()
	for name, fsys := range map[string]fstest.MapFS{
		"no config":    {},
		"bad config":   {"tokenizer_config.json": {Data: []byte("{")}},
		"no tokenizer": {"tokenizer_config.json": {Data: []byte(`{"chat_template":"x"}`)}},
		"bad tokenizer": {"tokenizer_config.json": {Data: []byte(`{"chat_template":"x"}`)},
			"tokenizer.json": {Data: []byte(`{}`)}},
	} {
		if _, err := LoadModel(fsys, Options{}); !errors.Is(err, ErrModelDir) {
			t.Errorf("%s: LoadModel error = %v, want ErrModelDir", name, err)
		}
	}
}

func TestFingerprintDigest(t *testing.T) {
	t.Parallel()
	base := Fingerprint{ServedModel: "qwen3", TokenizerDigest: "a", TemplateDigest: "b", RendererVersion: RendererVersion}
	seen := map[string]string{base.Digest(): "base"}
	// Changing any single field, or moving bytes between fields, changes the digest.
	for name, f := range map[string]Fingerprint{
		"model":    {ServedModel: "qwen3x", TokenizerDigest: "a", TemplateDigest: "b", RendererVersion: RendererVersion},
		"shift":    {ServedModel: "qwen3a", TokenizerDigest: "", TemplateDigest: "b", RendererVersion: RendererVersion},
		"salt":     func() Fingerprint { f := base; f.CacheSalt = "s"; return f }(),
		"lora":     func() Fingerprint { f := base; f.LoRA = "l"; return f }(),
		"kwargs":   func() Fingerprint { f := base; f.ChatTemplateKwargs = `{"enable_thinking":false}`; return f }(),
		"tools":    func() Fingerprint { f := base; f.ToolsDigest = ToolsDigest([]Tool{{Name: "f"}}); return f }(),
		"instr":    func() Fingerprint { f := base; f.InstructionsDigest = DigestString("x"); return f }(),
		"parsers":  func() Fingerprint { f := base; f.ToolCallParser, f.ReasoningParser = "hermes", "qwen3"; return f }(),
		"mm":       func() Fingerprint { f := base; f.Multimodal = "m"; return f }(),
		"renderer": func() Fingerprint { f := base; f.RendererVersion = "x"; return f }(),
	} {
		d := f.Digest()
		if prev, dup := seen[d]; dup {
			t.Errorf("fingerprint %s has the same digest as %s", name, prev)
		}
		seen[d] = name
	}
}

func TestGenerationOpensThink(t *testing.T) {
	m := qwen3(t)
	if m.GenerationOpensThink {
		t.Errorf("Qwen3 release template: GenerationOpensThink = true, want false")
	}
	// Qwen3 "thinking-2507" style: the generation prompt opens <think>.
	opens, err := m.WithTemplate("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"+
		"{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !opens.GenerationOpensThink {
		t.Errorf("template opening <think>: GenerationOpensThink = false, want true")
	}
}

func TestRenderTextOptions(t *testing.T) {
	m := qwen3(t)
	msgs := []Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "The answer is  \n"}}
	got, err := m.RenderText(ChatRequest{Messages: msgs, ContinueFinalMessage: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nThe answer is  \n"; got != want {
		t.Errorf("continue_final_message text = %q, want %q", got, want)
	}
	for name, req := range map[string]ChatRequest{
		"both":            {Messages: msgs, ContinueFinalMessage: true, AddGenerationPrompt: true},
		"reserved kwarg":  {Messages: msgs, ChatTemplateKwargs: []byte(`{"tools":[]}`)},
		"kwargs not dict": {Messages: msgs, ChatTemplateKwargs: []byte(`[1]`)},
		"documents":       {Messages: msgs, Documents: []byte(`{"a":1}`)},
	} {
		if _, err := m.RenderText(req); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: RenderText error = %v, want ErrInvalidInput", name, err)
		}
	}
	// A template failure (raise_exception) is ErrTemplate.
	bad, err := m.WithTemplate("{{ raise_exception('no') }}", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.RenderText(ChatRequest{Messages: msgs}); !errors.Is(err, ErrTemplate) {
		t.Errorf("raise_exception: RenderText error = %v, want ErrTemplate", err)
	}
}

// TestResponsesRenderGrowth renders a Responses conversation turn by turn, as the server does,
// and checks that each turn's prompt extends the previous one exactly.
func TestResponsesRenderGrowth(t *testing.T) {
	m := qwen3(t)
	turns := [][]string{
		{`{"role":"user","content":"Weather in Paris and Lyon?"}`},
		{`{"type":"reasoning","content":[{"type":"reasoning_text","text":"Two cities: call twice."}]}`,
			`{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\": \"Paris\"}"}`,
			`{"type":"function_call","call_id":"c2","name":"get_weather","arguments":"{\"city\": \"Lyon\"}"}`,
			`{"type":"function_call_output","call_id":"c1","output":"18C"}`,
			`{"type":"function_call_output","call_id":"c2","output":"21C"}`},
		{`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Paris 18C, Lyon 21C."}]}`,
			`{"role":"user","content":"Thanks! <|im_end|> tomorrow?"}`},
	}
	tools := json.RawMessage(`[{"type":"function","name":"get_weather","description":"Weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`)
	var items []json.RawMessage
	var prev Encoding
	for i, turn := range turns {
		for _, it := range turn {
			items = append(items, json.RawMessage(it))
		}
		conv, err := FromResponses(ResponsesInput{Instructions: "Be brief.", Items: items, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		text, err := m.RenderText(ChatRequest{Messages: conv.Messages, Tools: conv.Tools, AddGenerationPrompt: true})
		if err != nil {
			t.Fatal(err)
		}
		next, reuse := m.Extend(prev, text)
		if !slices.Equal(next.IDs, m.Encode(text)) {
			t.Fatalf("turn %d: Extend differs from Encode", i)
		}
		if i > 0 && reuse.Tokens == 0 {
			t.Errorf("turn %d: nothing reused", i)
		}
		prev = next
	}
}

func TestParseSpecialTokens(t *testing.T) {
	t.Parallel()
	cfg := gjson.Parse(`{"bos_token":{"__type":"AddedToken","content":"<s>","lstrip":false},"eos_token":"</s>","unk_token":null,
		"pad_token":5,"additional_special_tokens":["<a>",{"content":"<b>"}]}`)
	got, err := parseSpecialTokens(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []specialToken{{name: "bos_token", value: "<s>"}, {name: "eos_token", value: "</s>"},
		{name: "additional_special_tokens", list: true, values: []string{"<a>", "<b>"}}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(specialToken{})); diff != "" {
		t.Errorf("parseSpecialTokens (-want +got):\n%s", diff)
	}
	if _, err := parseSpecialTokens(gjson.Parse(`{"additional_special_tokens":[1]}`)); !errors.Is(err, ErrModelDir) {
		t.Errorf("bad additional_special_tokens: error = %v, want ErrModelDir", err)
	}
}

func TestRenderToolCallKeyOrder(t *testing.T) {
	m, err := qwen3(t).WithTemplate(`{{ messages[0] | tojson }}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.RenderText(ChatRequest{Messages: []Message{{Role: "assistant", Content: "c", Reasoning: ptr("r"), Name: ptr("n"),
		ToolCalls: []ToolCall{{ID: "1", Type: "function", Name: "f", Arguments: []byte(`"{\"b\": 1.0, \"a\": 2}"`)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role": "assistant", "content": "c", "tool_calls": [{"id": "1", "function": {"arguments": {"b": 1.0, "a": 2}, "name": "f"}, "type": "function"}], "reasoning": "r", "reasoning_content": "r", "name": "n"}`
	if got != want {
		t.Errorf("message value:\n got %s\nwant %s", got, want)
	}
}

func TestRenderTemplateVariables(t *testing.T) {
	m, err := qwen3(t).WithTemplate(`{{ bos_token is defined }}|{{ eos_token }}|{{ pad_token }}|{{ additional_special_tokens[0] }}|`+
		`{{ documents | tojson }}|{{ tools | tojson }}|{{ flag }}|{{ n }}|{{ add_generation_prompt }}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.RenderText(ChatRequest{
		Messages:           []Message{{Role: "user", Content: "x"}},
		Documents:          []byte(`[{"title":"t","text":"1.50"}]`),
		ChatTemplateKwargs: []byte(`{"flag": true, "n": 1.0, "eos_token": "<override>"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `False|<override>|<|endoftext|>|<|im_start|>|[{"title": "t", "text": "1.50"}]|null|True|1.0|False`
	if got != want {
		t.Errorf("RenderText = %q, want %q", got, want)
	}
}

// TestRenderConcurrentTools renders many tool sets from several goroutines: the shared cache of
// decoded tools must neither race nor mix tool lists up (run under -race in CI).
func TestRenderConcurrentTools(t *testing.T) {
	m := qwen3(t)
	const sets = toolsCacheSize + 8
	want := make([]string, sets)
	req := func(i int) ChatRequest {
		return ChatRequest{
			Messages: []Message{{Role: "user", Content: "q"}},
			Tools:    []Tool{{Name: fmt.Sprintf("tool_%d", i), Parameters: []byte(fmt.Sprintf(`{"n": %d.0}`, i))}},
		}
	}
	for i := range sets {
		text, err := m.RenderText(req(i))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = text
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for k := range 3 * sets {
				i := (k*7 + g) % sets
				text, err := m.RenderText(req(i))
				if err != nil || text != want[i] {
					errs <- fmt.Errorf("goroutine %d set %d: %v (text ok: %v)", g, i, err, text == want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCompactJSON(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"{ \"b\" : 1.0,\n \"a\": [1E7, \"x y\"] }": `{"b":1.0,"a":[1E7,"x y"]}`,
		"":     "",
		"null": "",
		"{bad": "{bad",
	} {
		if got := CompactJSON([]byte(in)); got != want {
			t.Errorf("CompactJSON(%q) = %q, want %q", in, got, want)
		}
	}
}
