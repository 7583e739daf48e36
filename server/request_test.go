package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func seqIDs() idSource {
	n := 0
	return func(prefix string) string {
		n++
		return prefix + "_" + strings.Repeat("0", 3) + string(rune('0'+n))
	}
}

func TestParseRequestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, param string
	}{
		{"not json", `{"model":`, ""},
		{"not object", `[1]`, ""},
		{"no model", `{"input":"hi"}`, "model"},
		{"model type", `{"model":3,"input":"hi"}`, "model"},
		{"no input", `{"model":"m"}`, "input"},
		{"input type", `{"model":"m","input":3}`, "input"},
		{"item not object", `{"model":"m","input":[1]}`, "input[0]"},
		{"unknown item type", `{"model":"m","input":[{"type":"image_generation_call"}]}`, "input[0].type"},
		{"item without type or role", `{"model":"m","input":[{"content":"x"}]}`, "input[0].type"},
		{"unknown role", `{"model":"m","input":[{"role":"wizard","content":"x"}]}`, "input[0].role"},
		{"stream type", `{"model":"m","input":"x","stream":"yes"}`, "stream"},
		{"temperature range", `{"model":"m","input":"x","temperature":3}`, "temperature"},
		{"max_output_tokens", `{"model":"m","input":"x","max_output_tokens":0}`, "max_output_tokens"},
		{"background without store", `{"model":"m","input":"x","background":true,"store":false}`, "background"},
		{"background not a boolean", `{"model":"m","input":"x","background":"yes"}`, "background"},
		{"conversation and previous_response_id", `{"model":"m","input":"x","conversation":"conv_1","previous_response_id":"resp_1"}`, "conversation"},
		{"conversation without id", `{"model":"m","input":"x","conversation":{}}`, "conversation.id"},
		{"conversation not a string", `{"model":"m","input":"x","conversation":3}`, "conversation"},
		{"tool without name", `{"model":"m","input":"x","tools":[{"type":"function"}]}`, "tools[0].name"},
		{"tool_choice required without tools", `{"model":"m","input":"x","tool_choice":"required"}`, "tool_choice"},
		{"tool_choice required with empty tools", `{"model":"m","input":"x","tools":[],"tool_choice":"required"}`, "tool_choice"},
		{"tool_choice unknown function", `{"model":"m","input":"x","tools":[{"type":"function","name":"a"}],"tool_choice":{"type":"function","name":"b"}}`, "tool_choice.name"},
		{"effort", `{"model":"m","input":"x","reasoning":{"effort":"max"}}`, "reasoning.effort"},
		{"schema", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}}`, "text.format.schema"},
		{"metadata value", `{"model":"m","input":"x","metadata":{"k":1}}`, "metadata.k"},
		{"metadata value of 513 characters", `{"model":"m","input":"x","metadata":{"k":"` + strings.Repeat("é", 513) + `"}}`, "metadata.k"},
		{"metadata key of 65 characters", `{"model":"m","input":"x","metadata":{"` + strings.Repeat("é", 65) + `":"v"}}`, "metadata"},
		{"truncation", `{"model":"m","input":"x","truncation":"middle"}`, "truncation"},
		{"item_reference without id", `{"model":"m","input":[{"type":"item_reference"}]}`, "input[0].id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseRequest([]byte(tt.body), limits{MaxInputItems: 10}, seqIDs())
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("parseRequest(%s) = %v, want *APIError", tt.body, err)
			}
			if ae.Status != 400 || ae.Param != tt.param || ae.Type != "invalid_request_error" {
				t.Errorf("parseRequest(%s) = %d %q %q, want 400 param %q", tt.body, ae.Status, ae.Type, ae.Param, tt.param)
			}
		})
	}
}

// TestParseRequestMetadataCountsCharacters: metadata's limits are characters, as OpenAI states
// them: 512 two-byte characters (1,024 bytes) are accepted.
func TestParseRequestMetadataCountsCharacters(t *testing.T) {
	body := `{"model":"m","input":"x","metadata":{"` + strings.Repeat("é", 64) + `":"` + strings.Repeat("é", 512) + `"}}`
	if _, err := parseRequest([]byte(body), limits{MaxInputItems: 10}, seqIDs()); err != nil {
		t.Fatalf("64-character key and 512-character value refused: %v", err)
	}
}

func TestParseRequestNormalizes(t *testing.T) {
	t.Parallel()
	body := `{"model":"qwen3","input":[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"c1","output":"42","id":"fco_client"}],
	"instructions":"be brief","temperature":0.70,"tools":[{"type":"function","name":"f","parameters":{"b":1,"a":2.50}}],
	"tool_choice":"required","store":false,"stream":true,"include":["reasoning.encrypted_content"],"prompt_cache_key":"x","client_metadata":{"a":"b"}}`
	r, err := parseRequest([]byte(body), limits{MaxInputItems: 10}, seqIDs())
	if err != nil {
		t.Fatal(err)
	}
	if r.Store || !r.Stream || !r.IncludeEncrypted || r.ToolChoice.Mode != "required" || *r.Instructions != "be brief" {
		t.Errorf("flags wrong: %+v", r)
	}
	if string(r.Temperature) != "0.70" {
		t.Errorf("temperature spelled %s, want 0.70", r.Temperature)
	}
	if got := gjson.GetBytes(r.Tools, "0.parameters").Raw; got != `{"b":1,"a":2.50}` {
		t.Errorf("tool parameters re-spelled: %s", got)
	}
	if len(r.Input) != 2 {
		t.Fatalf("input = %d items", len(r.Input))
	}
	if gjson.GetBytes(r.Input[0], "type").Str != "message" || gjson.GetBytes(r.Input[0], "id").Str == "" {
		t.Errorf("message not normalized: %s", r.Input[0])
	}
	if gjson.GetBytes(r.Input[1], "id").Str != "fco_client" {
		t.Errorf("client id not kept: %s", r.Input[1])
	}
}

func TestParseRequestStringInput(t *testing.T) {
	t.Parallel()
	r, err := parseRequest([]byte(`{"model":"m","input":"<|im_end|> \"quoted\""}`), limits{MaxInputItems: 10}, seqIDs())
	if err != nil {
		t.Fatal(err)
	}
	it := gjson.ParseBytes(r.Input[0])
	if it.Get("role").Str != "user" || it.Get("content.0.type").Str != "input_text" || it.Get("content.0.text").Str != `<|im_end|> "quoted"` {
		t.Errorf("string input became %s", r.Input[0])
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{`{"model":"m","input":"x"}`, `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}],"tools":[{"type":"namespace","tools":[]}]}`, `{}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseRequest(body, limits{MaxInputItems: 100}, seqIDs())
		if err == nil && r.Model == "" {
			t.Fatal("accepted a request without a model")
		}
	})
}

// TestInputIDs checks that the ids parseInput records are the ones the normalized items hold
// (persist stores each item under its recorded id).
func TestInputIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       []string
	}{
		{"string input", `{"model":"m","input":"hi"}`, []string{"msg_0001"}},
		{"client ids kept", `{"model":"m","input":[{"id":"a","role":"user","content":"x"},{"type":"function_call_output","id":"b","call_id":"c","output":"o"}]}`, []string{"a", "b"}},
		{"ids added", `{"model":"m","input":[{"role":"user","content":"x"},{"type":"function_call_output","call_id":"c","output":"o"}]}`, []string{"msg_0001", "fco_0002"}},
		{"null id replaced", `{"model":"m","input":[{"id":null,"role":"user","content":"x"}]}`, []string{"msg_0001"}},
		{"empty id replaced", `{"model":"m","input":[{"type":"message","id":"","role":"user","content":"x"}]}`, []string{"msg_0001"}},
		{"reference", `{"model":"m","input":[{"type":"item_reference","id":"fc_1"},{"role":"user","content":"x"}]}`, []string{"fc_1", "msg_0001"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := parseRequest([]byte(tt.body), limits{MaxInputItems: 10}, seqIDs())
			if err != nil {
				t.Fatalf("parseRequest(%s): %v", tt.body, err)
			}
			if len(req.InputIDs) != len(tt.want) || len(req.Input) != len(tt.want) {
				t.Fatalf("%d ids for %d items, want %d", len(req.InputIDs), len(req.Input), len(tt.want))
			}
			for i, want := range tt.want {
				if got, held := req.inputID(i), itemID(req.Input[i]); got != want || held != want {
					t.Errorf("input[%d]: recorded id %q, item holds %q, want %q", i, got, held, want)
				}
			}
		})
	}
}
