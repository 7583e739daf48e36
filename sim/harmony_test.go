package sim_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/render/bpe"
	"github.com/stitchllm/stitch/render/harmony"
	"github.com/stitchllm/stitch/sim"
)

// TestHarmonyAnswers renders Responses conversations with render/harmony (as vLLM prompts
// gpt-oss) and checks the simulator answers in Harmony: analysis, a commentary call to
// functions.NAME ending in <|call|> (stop_reason 200012), a preamble before several calls, and a
// final answer ending in <|return|> (stop_reason null).
func TestHarmonyAnswers(t *testing.T) {
	t.Parallel()
	gz, err := os.ReadFile("../testdata/models/gptoss/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := bpe.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := harmony.NewEncoder(tok)
	if err != nil {
		t.Fatal(err)
	}
	tools := json.RawMessage(`[{"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"number"}},"required":["city"]}},
{"type":"function","name":"get_time","description":"Time","parameters":{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}}]`)
	call := `{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\": \"Paris\"}"}`
	output := `{"type":"function_call_output","call_id":"call_1","output":"sunny 20C"}`
	tests := []struct {
		name       string
		parser     string // "" : detected from the tokenizer
		items      []string
		want       []string
		stopReason any
		prefill    string // a forced tool call (family.Harmony.ForcedToolCall)
	}{
		{"call", "", []string{`{"role":"user","content":"Weather in Paris? Use get_weather."}`},
			[]string{"<|channel|>analysis<|message|>The user asks: ", "I should call get_weather.", "<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\""},
			float64(harmony.TokenCall), ""},
		{"preamble before several calls", "openai", []string{`{"role":"user","content":"Call get_time and get_weather in parallel for Paris."}`},
			[]string{"<|start|>assistant<|channel|>commentary<|message|>I will call get_time, get_weather, one after the other.<|end|><|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{\"tz\": "},
			float64(harmony.TokenCall), ""},
		{"final after the tool", "", []string{`{"role":"user","content":"Weather in Paris? Use get_weather."}`, call, output},
			[]string{"<|channel|>analysis<|message|>", "The tool answered", "<|end|><|start|>assistant<|channel|>final<|message|>The tool returned: \"sunny 20C\"."},
			nil, ""},
		{"text without tools", "", []string{`{"role":"user","content":"Tell me a story."}`},
			[]string{"<|channel|>analysis<|message|>", "<|start|>assistant<|channel|>final<|message|>"}, nil, ""},
		{"forced any function", "", []string{`{"role":"user","content":"Weather in Paris? Use get_weather."}`},
			[]string{".get_weather <|constrain|>json<|message|>{\"city\": \"Paris\""}, float64(harmony.TokenCall), "<|channel|>commentary to=functions"},
		{"forced named", "", []string{`{"role":"user","content":"What time is it in Tokyo?"}`},
			[]string{`{"tz": `}, float64(harmony.TokenCall), "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, ts := newTestServer(t, sim.Options{Tokenizer: tok, ToolCallParser: tt.parser, MaxModelLen: 8192})
			req := harmony.Request{Tools: tools}
			if strings.HasSuffix(tt.name, "without tools") {
				req.Tools = nil
			}
			for _, it := range tt.items {
				req.Items = append(req.Items, json.RawMessage(it))
			}
			_, p, err := enc.RenderResponses(req, harmony.Options{StartDate: "2026-12-02"})
			if err != nil {
				t.Fatal(err)
			}
			prompt := append(p.IDs, tok.Encode(tt.prefill)...)
			status, out := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 800,
				"skip_special_tokens": false, "return_token_ids": true, "stop_token_ids": harmony.StopTokenIDs})
			if status != 200 {
				t.Fatalf("status %d: %s", status, out)
			}
			var r struct {
				Choices []struct {
					Text         string   `json:"text"`
					TokenIDs     []uint32 `json:"token_ids"`
					FinishReason string   `json:"finish_reason"`
					StopReason   any      `json:"stop_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			c := r.Choices[0]
			for _, w := range tt.want {
				if !strings.Contains(c.Text, w) {
					t.Errorf("answer lacks %q:\n%s", w, c.Text)
				}
			}
			wantLast := uint32(harmony.TokenReturn)
			if tt.stopReason != nil {
				wantLast = harmony.TokenCall
			}
			if c.FinishReason != "stop" || c.StopReason != tt.stopReason || c.TokenIDs[len(c.TokenIDs)-1] != wantLast {
				t.Errorf("finish %s stop_reason %v last id %d; want stop, %v, %d", c.FinishReason, c.StopReason, c.TokenIDs[len(c.TokenIDs)-1], tt.stopReason, wantLast)
			}
			if strings.Count(c.Text, "<|call|>") > 1 {
				t.Errorf("more than one call in a Harmony turn: %s", c.Text)
			}
		})
	}
}

func TestHarmonyRefused(t *testing.T) {
	t.Parallel()
	_, err := sim.New(sim.Options{Tokenizer: testTokenizer(t), ToolCallParser: "openai"})
	if err == nil || !strings.Contains(err.Error(), "<|channel|>") {
		t.Fatalf("openai on Qwen3: err %v, want one naming the missing Harmony markers", err)
	}
}
