package stream_test

import (
	"strings"
	"testing"

	"github.com/stitchllm/stitch/stream"
)

// TestConverterMalformedCallEndsIncomplete: a call the model breaks after it
// began (or stops inside) ends the response incomplete with reason
// malformed_tool_call and the function_call item incomplete, streamed events
// and final object alike; the broken rest never becomes message text
// (issue 16 item 2). hermes runs on the real Qwen3 tokenizer and on bytes.
func TestConverterMalformedCallEndsIncomplete(t *testing.T) {
	hermesParser := func(t *testing.T) (stream.OutputParser, famTokenizer) {
		tok := tokenizer(t)
		tz := famTokenizer{name: "qwen3", lookup: tok, encode: tok.Encode, dec: func() stream.TokenDecoder { return tok.NewDecodeStream() }}
		return mustQwen3Parser(t, tok, tok.NewDecodeStream(), nil), tz
	}
	family := func(s famSuite) func(t *testing.T) (stream.OutputParser, famTokenizer) {
		return func(t *testing.T) (stream.OutputParser, famTokenizer) {
			tz := bytesTokenizer(s.markerStrings(t)...)
			return s.newParser(t, tz, nil), tz
		}
	}
	tests := []struct {
		name   string
		parser func(t *testing.T) (stream.OutputParser, famTokenizer)
		output string
		finish string
		want   string // the response status
		reason string
		args   string // the function_call's arguments
	}{
		{"hermes parser broken", hermesParser, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1,,}}\n</tool_call><|im_end|>", "stop",
			stream.StatusIncomplete, stream.ReasonMalformedToolCall, `{"a": 1,`},
		{"hermes parser stops inside", hermesParser, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1<|im_end|>", "stop",
			stream.StatusIncomplete, stream.ReasonMalformedToolCall, `{"a": 1`},
		{"hermes parser length", hermesParser, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1", "length",
			stream.StatusIncomplete, stream.ReasonMaxOutputTokens, `{"a": 1`},
		{"hermes parser whole", hermesParser, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call><|im_end|>", "stop",
			stream.StatusCompleted, "", `{"a": 1}`},
		{"hermes family broken", family(hermesSuite), "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1,,}}\n</tool_call><|im_end|>", "stop",
			stream.StatusIncomplete, stream.ReasonMalformedToolCall, `{"a": 1,`},
		{"glm45 broken", family(glm45Suite), "<tool_call>f\n<arg_key>k</arg_key>\n<arg_value>1</arg_value>\njunk</tool_call><|user|>", "stop",
			stream.StatusIncomplete, stream.ReasonMalformedToolCall, `{"k": 1`},
		{"mistral broken", family(mistralV11Suite), `[TOOL_CALLS]f[ARGS]{"a" 1}</s>`, "stop",
			stream.StatusIncomplete, stream.ReasonMalformedToolCall, `{"a" `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, tz := tt.parser(t)
			c := stream.NewConverter(stream.ConverterOptions{Output: p, Emitter: stream.EmitterOptions{NewID: counterIDs(), Now: fixedNow}})
			evs := c.Start(nil)
			evs = c.Chunk(evs, &stream.Chunk{TokenIDs: tz.encode(tt.output), FinishReason: tt.finish})
			evs = c.End(evs)
			last, ok := evs[len(evs)-1].(*stream.ResponseEvent)
			if !ok {
				t.Fatalf("last event %T", evs[len(evs)-1])
			}
			wantType := stream.EventResponseCompleted
			if tt.want == stream.StatusIncomplete {
				wantType = stream.EventResponseIncomplete
			}
			if last.Type != wantType {
				t.Errorf("terminal event %s, want %s", last.Type, wantType)
			}
			for _, r := range []*stream.Response{last.Response, c.Response()} {
				if r.Status != tt.want {
					t.Errorf("status %q, want %q", r.Status, tt.want)
				}
				reason := ""
				if r.IncompleteDetails != nil {
					reason = r.IncompleteDetails.Reason
				}
				if reason != tt.reason {
					t.Errorf("incomplete_details.reason %q, want %q", reason, tt.reason)
				}
				if tt.want == stream.StatusCompleted && r.CompletedAt == 0 {
					t.Error("completed_at unset on a completed response")
				}
				if len(r.Output) != 1 || r.Output[0].Type != stream.ItemFunctionCall {
					t.Fatalf("output = %+v, want one function_call (no message text)", r.Output)
				}
				fc := r.Output[0]
				wantItem := stream.StatusCompleted
				if tt.reason != "" {
					wantItem = stream.StatusIncomplete
				}
				if fc.Status != wantItem || fc.Arguments != tt.args {
					t.Errorf("function_call status %q arguments %q, want %q %q", fc.Status, fc.Arguments, wantItem, tt.args)
				}
			}
			for _, ev := range evs {
				if te, ok := ev.(*stream.TextDeltaEvent); ok && strings.Contains(te.Delta, "tool_call") {
					t.Errorf("stray marker streamed as text: %q", te.Delta)
				}
				if oe, ok := ev.(*stream.OutputItemEvent); ok && oe.Type == stream.EventOutputItemDone && tt.reason != "" && oe.Item.Status != stream.StatusIncomplete {
					t.Errorf("output_item.done status %q, want incomplete", oe.Item.Status)
				}
			}
		})
	}
}
