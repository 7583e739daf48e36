package sim_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/sim"
)

// vLLM's StructuredOutputsParams takes exactly one constraint; two, or none, is a 400.
func TestStructuredOutputsValidation(t *testing.T) {
	_, ts := newTestServer(t, sim.Options{})
	tests := []struct {
		name string
		so   string
		want string // message prefix; "" means accepted
	}{
		{"json", `{"json":{"type":"object"}}`, ""},
		{"regex", `{"regex":"[a-z]+"}`, ""},
		{"choice and options", `{"choice":["a","b"],"disable_any_whitespace":true}`, ""},
		{"json and regex", `{"json":{"type":"object"},"regex":"x"}`, "You can only use one kind of structured outputs constraint but multiple are specified: "},
		{"regex and choice", `{"regex":"x","choice":["a"]}`, "You can only use one kind of structured outputs constraint"},
		{"json_object false counts", `{"json_object":false,"choice":["a"]}`, "You can only use one kind of structured outputs constraint"},
		{"none", `{"disable_any_whitespace":true}`, "You must use one kind of structured outputs constraint but none are specified: "},
		{"null values", `{"json":null,"regex":null}`, "You must use one kind of structured outputs constraint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"model":"qwen3","prompt":"Hi","max_tokens":50,"structured_outputs":` + tt.so + `}`
			status, out := post(t, ts.URL+"/v1/completions", body)
			if tt.want == "" {
				if status != http.StatusOK {
					t.Fatalf("status %d: %s", status, out)
				}
				return
			}
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", status, out)
			}
			if msg := gjson.GetBytes(out, "error.message").String(); !strings.HasPrefix(msg, tt.want) {
				t.Errorf("message %q, want prefix %q", msg, tt.want)
			}
		})
	}
}

// Answers satisfy the constraint, so responses.parse() and friends work against the simulator.
func TestStructuredOutputsAnswers(t *testing.T) {
	_, ts := newTestServer(t, sim.Options{})
	prompt := qwenChat(nil, false, [2]string{"user", "Describe Alice from Paris"})
	t.Run("json schema", func(t *testing.T) {
		schema := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":120},` +
			`"tags":{"type":"array","items":{"type":"string"}},"admin":{"type":"boolean"}},"required":["name","age","tags","admin"],"additionalProperties":false}`
		for seed := range 5 {
			c := complete(t, ts.URL, map[string]any{"model": "qwen3", "prompt": prompt, "max_tokens": 400, "seed": seed,
				"structured_outputs": map[string]any{"json": json.RawMessage(schema)}})
			text := c.Choices[0].Text
			var v struct {
				Name  string   `json:"name"`
				Age   int      `json:"age"`
				Tags  []string `json:"tags"`
				Admin *bool    `json:"admin"`
			}
			dec := json.NewDecoder(strings.NewReader(text))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil || v.Name == "" || v.Admin == nil || len(v.Tags) == 0 || v.Age < 0 || v.Age > 120 {
				t.Errorf("seed %d: answer %q does not satisfy the schema (%v)", seed, text, err)
			}
			if c.Choices[0].FinishReason != "stop" {
				t.Errorf("seed %d: finish_reason %q", seed, c.Choices[0].FinishReason)
			}
		}
	})
	t.Run("json schema as a string", func(t *testing.T) {
		c := complete(t, ts.URL, map[string]any{"model": "qwen3", "prompt": prompt, "max_tokens": 400,
			"structured_outputs": map[string]any{"json": `{"type":"object","properties":{"ok":{"type":"boolean"}}}`}})
		if v := gjson.Get(c.Choices[0].Text, "ok"); v.Type != gjson.True && v.Type != gjson.False {
			t.Errorf("answer %q has no boolean ok", c.Choices[0].Text)
		}
	})
	t.Run("json_object", func(t *testing.T) {
		c := complete(t, ts.URL, map[string]any{"model": "qwen3", "prompt": prompt, "max_tokens": 400,
			"structured_outputs": map[string]any{"json_object": true}})
		if !gjson.Valid(c.Choices[0].Text) || !gjson.Parse(c.Choices[0].Text).IsObject() {
			t.Errorf("answer %q is not a JSON object", c.Choices[0].Text)
		}
	})
	t.Run("choice", func(t *testing.T) {
		choices := []string{"positive", "negative", "neutral"}
		for seed := range 5 {
			c := complete(t, ts.URL, map[string]any{"model": "qwen3", "prompt": prompt, "max_tokens": 400, "seed": seed,
				"structured_outputs": map[string]any{"choice": choices}})
			if !slices.Contains(choices, c.Choices[0].Text) {
				t.Errorf("seed %d: answer %q is not one of %v", seed, c.Choices[0].Text, choices)
			}
		}
	})
}

// --stream-interval N: the first id alone, then N ids per chunk, the rest in the last chunk.
func TestStreamInterval(t *testing.T) {
	_, ts := newTestServer(t, sim.Options{StreamInterval: 5})
	events := streamCompletion(t, ts.URL, map[string]any{"model": "qwen3", "prompt": "Tell me a story", "max_tokens": 23,
		"return_token_ids": true, "ignore_eos": true})
	var sizes []int
	for _, e := range events {
		if e == "[DONE]" {
			continue
		}
		sizes = append(sizes, len(gjson.Get(e, "choices.0.token_ids").Array()))
	}
	if want := []int{1, 5, 5, 5, 5, 2}; !slices.Equal(sizes, want) {
		t.Errorf("ids per chunk %v, want %v", sizes, want)
	}
}
