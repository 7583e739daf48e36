package sim

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/sim/simtest"
)

func newFuzzServer(t testing.TB) *Server {
	s, err := New(Options{Tokenizer: simtest.ByteTokenizer{}, Fast: true, MaxModelLen: 4096, OutputLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func FuzzParseConversation(f *testing.F) {
	for _, s := range []string{
		"",
		"plain text",
		"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
		"<|im_start|>system\n<tools>\n{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}}}}}\n</tools><|im_end|>\n<|im_start|>user\nf<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
		"<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
		"<|im_start|><|im_start|>\n<|im_end|><tools>\n{}\n",
	} {
		f.Add(s)
	}
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, text string) {
		c := parseConversation(text)
		if c.open && !strings.HasSuffix(text, c.prefill) {
			t.Fatalf("prefill %q is not the end of the prompt", c.prefill)
		}
		out, _ := s.model.answer(text, rand.New(rand.NewPCG(1, 2)))
		if _, call, ok := strings.Cut(out, "<tool_call>\n"); ok {
			call, _, _ = strings.Cut(call, "\n</tool_call>")
			if !json.Valid([]byte(call)) {
				t.Fatalf("tool call %q is not JSON", call)
			}
		}
	})
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c", "\n\t\x00\x1f", "日本 🌍", "\xff\xfe", "\xe6\x97", "</script>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("appendJSONString(%q) = %s: %v", s, b, err)
		}
		var want strings.Builder
		for _, r := range s { // invalid bytes range as U+FFFD, one per byte
			want.WriteRune(r)
		}
		if got != want.String() {
			t.Fatalf("round trip of %q = %q, want %q", s, got, want.String())
		}
	})
}

func FuzzWriteArguments(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"type":"object","properties":{"a":{"type":"string"},"b":{"enum":[1,{"x":[true]}]}}}`,
		`{"properties":{"n":{"type":["null","integer"],"minimum":5,"maximum":3},"o":{"properties":{"p":{"items":{}}}}}}`,
		`{"properties":{"r":{"anyOf":[{"type":"number"}]},"s":{"type":"string","format":"date"},"c":{"const":"\u00e9\n"}}}`,
		`[1,2]`, `"x"`, `{"properties":{"d":{"default":null,"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807}}}`,
	} {
		f.Add(s, "Use it in Paris")
	}
	f.Fuzz(func(t *testing.T, schema, user string) {
		if !gjson.Valid(schema) {
			return
		}
		var b strings.Builder
		writeArguments(&b, gjson.Parse(schema), rand.New(rand.NewPCG(3, 4)), user)
		if !json.Valid([]byte(b.String())) {
			t.Fatalf("arguments for %s = %s: not JSON", schema, b.String())
		}
	})
}

func FuzzCompletionsBody(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi","max_tokens":3}`,
		`{"prompt":[1,2,3],"stream":true,"return_token_ids":true,"stream_options":{}}`,
		`{"prompt":["a",[5]],"stop":["x"],"stop_token_ids":[104],"seed":-1,"cache_salt":"s"}`,
		`{"prompt":[1.5]}`, `{"prompt":{}}`, `[]`, `{"prompt":"x","max_tokens":1e30}`,
		`{"prompt":"x","n":2}`, `{"prompt":"x","prompt_logprobs":1}`, `{"prompt":"x","ignore_eos":true,"max_tokens":50}`,
	} {
		f.Add(s)
	}
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusNotFound:
		default:
			t.Fatalf("POST %s = %d %s", body, rec.Code, rec.Body)
		}
		if rec.Code != http.StatusOK && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("error body %s is not JSON", rec.Body)
		}
		if st := s.Stats(); st.Used != 0 {
			t.Fatalf("blocks held after the request: %+v", st)
		}
	})
}

// FuzzFamilyAnswer feeds any text to every dialect's reader and every family's writer: no panic,
// a prefill is always the end of the prompt, and a Harmony turn holds at most one call.
func FuzzFamilyAnswer(f *testing.F) {
	for _, s := range []string{
		"",
		"<|start_header_id|>user<|end_header_id|>\n\n{\"name\": \"f\", \"parameters\": {\"type\": \"object\"}} f in parallel<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
		"<s>[AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": {\"name\": \"f\"}}][/AVAILABLE_TOOLS][INST]f[/INST][TOOL_CALLS]",
		"<｜User｜>{\"name\":\"f\",\"parameters\":{\"properties\":{}}}<｜Assistant｜><think>",
		"<|im_system|>tool<|im_middle|>x<|im_end|><|im_assistant|>assistant<|im_middle|>",
		"<|start|>developer<|message|>namespace functions {\ntype f = (_: {\na: string,\nb?: {\nc: number,\n},\n}) => any;\n} // namespace functions<|end|><|start|>user<|message|>f<|end|><|start|>assistant",
		"<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>",
	} {
		f.Add(s)
	}
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, text string) {
		readers := []dialect{harmonyDialect}
		for _, d := range dialects {
			readers = append(readers, d.d)
		}
		for _, d := range readers {
			c := d.parse(text)
			if c.open && !strings.HasSuffix(text, c.prefill) {
				t.Fatalf("%s: prefill %q is not the end of the prompt", d.name, c.prefill)
			}
		}
		for name, w := range callWriters {
			m := *s.model
			m.fam = &family{parser: name, calls: w}
			m.dialect = dialects[0].d
			m.answer(text, rand.New(rand.NewPCG(1, 2)))
		}
		m := *s.model
		m.dialect, m.harmony = harmonyDialect, true
		out, end := m.answer(text, rand.New(rand.NewPCG(1, 2)))
		if end == endCall && strings.Contains(out, hCall) {
			t.Fatalf("a call inside a Harmony call turn: %q", out)
		}
	})
}
