package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/stream"
)

// TestParseRequestFieldAnswers: every ignored field is type-checked, every rejected one refused,
// each naming its param (issue 18).
func TestParseRequestFieldAnswers(t *testing.T) {
	t.Parallel()
	tools := `"tools":[{"type":"function","name":"a"},{"type":"function","name":"b"}]`
	tests := []struct {
		name, body, param string // param "" → accepted
	}{
		{"include unknown", `{"model":"m","input":"x","include":["nope"]}`, "include[0]"},
		{"include not string", `{"model":"m","input":"x","include":[1]}`, "include[0]"},
		{"include logprobs", `{"model":"m","input":"x","include":["message.output_text.logprobs"]}`, ""},
		{"include hosted ignored", `{"model":"m","input":"x","include":["web_search_call.results","reasoning.encrypted_content"]}`, ""},
		{"top_logprobs 0", `{"model":"m","input":"x","top_logprobs":0}`, ""},
		{"top_logprobs 99", `{"model":"m","input":"x","top_logprobs":99}`, "top_logprobs"},
		{"top_logprobs -1", `{"model":"m","input":"x","top_logprobs":-1}`, "top_logprobs"},
		{"top_logprobs 5", `{"model":"m","input":"x","top_logprobs":5}`, ""},
		{"top_logprobs 20", `{"model":"m","input":"x","top_logprobs":20}`, ""},
		{"top_logprobs 21", `{"model":"m","input":"x","top_logprobs":21}`, "top_logprobs"},
		{"top_logprobs float", `{"model":"m","input":"x","top_logprobs":1.5}`, "top_logprobs"},
		{"max_tool_calls", `{"model":"m","input":"x","max_tool_calls":2}`, ""},
		{"max_tool_calls negative", `{"model":"m","input":"x","max_tool_calls":-1}`, "max_tool_calls"},
		{"max_tool_calls string", `{"model":"m","input":"x","max_tool_calls":"2"}`, "max_tool_calls"},
		{"reasoning.summary", `{"model":"m","input":"x","reasoning":{"summary":"auto"}}`, ""},
		{"reasoning.summary bad", `{"model":"m","input":"x","reasoning":{"summary":"long"}}`, "reasoning.summary"},
		{"text.verbosity", `{"model":"m","input":"x","text":{"verbosity":"low"}}`, ""},
		{"text.verbosity bad", `{"model":"m","input":"x","text":{"verbosity":"loud"}}`, "text.verbosity"},
		{"service_tier", `{"model":"m","input":"x","service_tier":"flex"}`, ""},
		{"service_tier bad", `{"model":"m","input":"x","service_tier":"gold"}`, "service_tier"},
		{"background_options", `{"model":"m","input":"x","background":true,"background_options":{"completion_window":"2h","continuation_id":"batch-7"}}`, ""},
		{"background_options bad window", `{"model":"m","input":"x","background_options":{"completion_window":"1h"}}`, "background_options.completion_window"},
		{"background_options not object", `{"model":"m","input":"x","background_options":"soon"}`, "background_options"},
		{"prompt_cache_key", `{"model":"m","input":"x","prompt_cache_key":"k"}`, ""},
		{"prompt_cache_key type", `{"model":"m","input":"x","prompt_cache_key":1}`, "prompt_cache_key"},
		{"include_obfuscation", `{"model":"m","input":"x","stream":true,"stream_options":{"include_obfuscation":false}}`, ""},
		{"include_obfuscation type", `{"model":"m","input":"x","stream_options":{"include_obfuscation":"no"}}`, "stream_options.include_obfuscation"},
		{"background false", `{"model":"m","input":"x","background":false}`, ""},
		{"context_management", `{"model":"m","input":"x","context_management":[{"type":"compaction"}]}`, "context_management"},
		{"context_management empty", `{"model":"m","input":"x","context_management":[]}`, ""},
		{"moderation", `{"model":"m","input":"x","moderation":{"model":"x"}}`, "moderation"},
		{"allowed_tools", `{"model":"m","input":"x",` + tools + `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"a"}]}}`, ""},
		{"allowed_tools unknown name", `{"model":"m","input":"x",` + tools + `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"c"}]}}`, "tool_choice.tools[0].name"},
		{"allowed_tools empty", `{"model":"m","input":"x",` + tools + `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}}`, "tool_choice.tools"},
		{"allowed_tools mode", `{"model":"m","input":"x",` + tools + `,"tool_choice":{"type":"allowed_tools","mode":"none","tools":[{"type":"function","name":"a"}]}}`, "tool_choice.mode"},
		{"allowed_tools no type", `{"model":"m","input":"x",` + tools + `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"name":"a"}]}}`, "tool_choice.tools[0].type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseRequest([]byte(tt.body), limits{MaxInputItems: 10}, seqIDs())
			if tt.param == "" {
				if err != nil {
					t.Fatalf("parseRequest(%s) = %v, want accepted", tt.body, err)
				}
				return
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Param != tt.param {
				t.Fatalf("parseRequest(%s) = %v, want 400 naming %q", tt.body, err, tt.param)
			}
		})
	}
}

func TestAllowedToolsOffered(t *testing.T) {
	t.Parallel()
	tools := `[{"type":"function","name":"a"},{"type":"web_search"},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"n1"},{"type":"function","name":"n2"}]},{"type":"function","name":"b"}]`
	tests := []struct{ allowed, want string }{
		{`[{"type":"function","name":"a"}]`, `[{"type":"function","name":"a"}]`},
		{`[{"type":"function","name":"b"},{"type":"web_search"}]`, `[{"type":"web_search"},{"type":"function","name":"b"}]`},
		{`[{"type":"function","name":"n2"}]`, `[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"n2"}]}]`},
		{`[{"type":"function","name":"n1"},{"type":"function","name":"n2"}]`, `[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"n1"},{"type":"function","name":"n2"}]}]`},
	}
	for _, tt := range tests {
		body := `{"model":"m","input":"x","tools":` + tools + `,"tool_choice":{"type":"allowed_tools","mode":"required","tools":` + tt.allowed + `}}`
		r, err := parseRequest([]byte(body), limits{MaxInputItems: 10}, seqIDs())
		if err != nil {
			t.Fatalf("%s: %v", tt.allowed, err)
		}
		if got := string(offeredTools(r)); got != tt.want {
			t.Errorf("allowed %s: offered %s, want %s", tt.allowed, got, tt.want)
		}
		if string(r.Tools) != tools {
			t.Errorf("allowed %s: the echoed tools changed: %s", tt.allowed, r.Tools)
		}
		if r.ToolChoice.Mode != "required" {
			t.Errorf("mode = %q, want required", r.ToolChoice.Mode)
		}
	}
}

// fakeParser replays fixed pieces, one list per Append.
type fakeParser struct{ steps [][]stream.Piece }

func (f *fakeParser) Append(dst []stream.Piece, _ uint32) []stream.Piece {
	if len(f.steps) == 0 {
		return dst
	}
	s := f.steps[0]
	f.steps = f.steps[1:]
	return append(dst, s...)
}
func (f *fakeParser) Finish(dst []stream.Piece) []stream.Piece { return dst }
func (f *fakeParser) Ended() bool                              { return false }

func TestPolicyParserDropsCalls(t *testing.T) {
	t.Parallel()
	call := func(name string) [][]stream.Piece {
		return [][]stream.Piece{
			{{Kind: stream.PieceToolCall, Text: name}},
			{{Kind: stream.PieceArguments, Text: `{"x":`}},
			{{Kind: stream.PieceArguments, Text: `1}`}, {Kind: stream.PieceToolCallDone}},
		}
	}
	script := [][]stream.Piece{{{Kind: stream.PieceText, Text: "hi"}, {Kind: stream.PieceTextDone}}}
	for _, n := range []string{"a", "b", "a", "a"} {
		script = append(script, call(n)...)
	}
	tests := []struct {
		name    string
		allowed map[string]bool
		max     int
		want    []string // names of the calls kept
	}{
		{"allowed a", map[string]bool{"a": true}, -1, []string{"a", "a", "a"}},
		{"max 2", nil, 2, []string{"a", "b"}},
		{"allowed a max 1", map[string]bool{"a": true}, 1, []string{"a"}},
		{"max 0", nil, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &policyParser{inner: &fakeParser{steps: append([][]stream.Piece(nil), script...)}, allowed: tt.allowed, max: tt.max}
			var out []stream.Piece
			for range script {
				out = p.Append(out, 0)
			}
			var names []string
			args, dones, texts := 0, 0, 0
			for _, pc := range out {
				switch pc.Kind {
				case stream.PieceToolCall:
					names = append(names, pc.Text)
				case stream.PieceArguments:
					args++
				case stream.PieceToolCallDone:
					dones++
				case stream.PieceText, stream.PieceTextDone:
					texts++
				}
			}
			if len(names) != len(tt.want) || args != 2*len(tt.want) || dones != len(tt.want) || texts != 2 {
				t.Fatalf("kept calls %v (args %d, dones %d, text %d), want %v", names, args, dones, texts, tt.want)
			}
			for i := range names {
				if names[i] != tt.want[i] {
					t.Fatalf("kept calls %v, want %v", names, tt.want)
				}
			}
		})
	}
}

func TestCheckHistory(t *testing.T) {
	t.Parallel()
	fc := func(id string) string {
		return `{"type":"function_call","call_id":"` + id + `","name":"f","arguments":"{}"}`
	}
	fco := func(id string) string { return `{"type":"function_call_output","call_id":"` + id + `","output":"1"}` }
	user := `{"type":"message","role":"user","content":"hi"}`
	items := func(xs ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(xs))
		for i, x := range xs {
			out[i] = json.RawMessage(x)
		}
		return out
	}
	tests := []struct {
		name        string
		prev, input []json.RawMessage
		param, msg  string // param "" → accepted
	}{
		{"answered in input", nil, items(user, fc("c1"), fco("c1")), "", ""},
		{"answered from chain", items(user, fc("c1")), items(fco("c1")), "", ""},
		{"orphan output", nil, items(user, fco("c9")), "input[1].call_id", "No tool call found for function call output with call_id c9."},
		{"orphan output with chain", items(user, fc("c1")), items(fco("c1"), fco("c2")), "input[1].call_id", ""},
		{"output before its call", nil, items(user, fco("c1"), fc("c1")), "input[1].call_id", ""},
		{"pending call from chain", items(user, fc("c1")), items(user), "input", "No tool output found for function call c1."},
		{"pending call in input", nil, items(user, fc("c1"), fc("c2"), fco("c2"), user), "input[1]", "No tool output found for function call c1."},
		{"incomplete call needs no output", nil, items(user, `{"type":"function_call","call_id":"c1","status":"incomplete","name":"f","arguments":"{"}`, user), "", ""},
		{"stored orphan not re-judged", items(user, fco("old")), items(user), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkHistory(tt.prev, tt.input)
			if tt.param == "" {
				if err != nil {
					t.Fatalf("checkHistory = %v, want nil", err)
				}
				return
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Param != tt.param || (tt.msg != "" && ae.Message != tt.msg) {
				t.Fatalf("checkHistory = %v, want 400 param %q message %q", err, tt.param, tt.msg)
			}
		})
	}
}

// TestTemplateFailuresAre400: a chat template that raises or runs out of fuel is the request's
// fault, as vLLM answers it (never a 5xx, which SDKs retry).
func TestTemplateFailuresAre400(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fmt.Errorf("apply chat template: %w: %w", render.ErrTemplate, errors.New("raise_exception: No user query found in messages.")),
		fmt.Errorf("apply chat template: %w: %w", render.ErrTemplate, errors.New("fuel exhausted")),
	} {
		if ae := classify(fmt.Errorf("prepare prompt: %w", err)); ae.Status != 400 || ae.Param != "input" {
			t.Errorf("classify(%v) = %d param %q, want 400 naming input", err, ae.Status, ae.Param)
		}
	}
}

// FuzzRequestPolicy: for any accepted request, the history check, the offered tools and the
// listed shape of every input item never panic, and what they build is valid JSON.
func FuzzRequestPolicy(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":[{"role":"user","content":"x"},{"type":"function_call","call_id":"c","name":"a","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"1"}]}`,
		`{"model":"m","input":"x","tools":[{"type":"function","name":"a"},{"type":"namespace","name":"n","tools":[{"type":"function","name":"b"},{"type":"function","name":"c"}]}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"b"}]}}`,
		`{"model":"m","input":[{"role":"assistant","content":"x\u0000\"y"}],"max_tool_calls":3,"include":["reasoning.encrypted_content"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseRequest(body, limits{MaxInputItems: 100}, seqIDs())
		if err != nil {
			return
		}
		_ = checkHistory(r.Input[:len(r.Input)/2], r.Input[len(r.Input)/2:])
		if tools := offeredTools(r); tools != nil && !json.Valid(tools) {
			t.Fatalf("offered tools are not JSON: %s", tools)
		}
		for _, it := range r.Input {
			if out := listedItem(it); !json.Valid(out) {
				t.Fatalf("listedItem(%s) = %s, not JSON", it, out)
			}
		}
	})
}
