package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// These tests check the checker: analyzeStream must accept a stream that follows
// FACTS-clients.md and flag each rule broken on purpose. They need no server and also run
// under -short.

type ev = map[string]any

// goodStream is a reasoning item, a message and a function call, streamed by the rules.
func goodStream() []ev {
	reasoning := ev{"type": "reasoning", "id": "rs_1", "summary": []any{},
		"content": []any{ev{"type": "reasoning_text", "text": "hmm"}}}
	message := ev{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
		"content": []any{ev{"type": "output_text", "text": "Hello!", "annotations": []any{}}}}
	call := ev{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f",
		"arguments": `{"a":1}`, "status": "completed"}
	final := ev{"id": "resp_1", "object": "response", "status": "completed", "model": "qwen3",
		"output": []any{reasoning, message, call}}
	start := ev{"id": "resp_1", "object": "response", "status": "in_progress", "output": []any{}}
	return []ev{
		{"type": "response.created", "response": start},
		{"type": "response.in_progress", "response": start},
		{"type": "response.output_item.added", "output_index": 0, "item": ev{"type": "reasoning", "id": "rs_1", "summary": []any{}}},
		{"type": "response.content_part.added", "output_index": 0, "content_index": 0, "item_id": "rs_1", "part": ev{"type": "reasoning_text", "text": ""}},
		{"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0, "item_id": "rs_1", "delta": "hm"},
		{"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0, "item_id": "rs_1", "delta": "m"},
		{"type": "response.reasoning_text.done", "output_index": 0, "content_index": 0, "item_id": "rs_1", "text": "hmm"},
		{"type": "response.content_part.done", "output_index": 0, "content_index": 0, "item_id": "rs_1", "part": ev{"type": "reasoning_text", "text": "hmm"}},
		{"type": "response.output_item.done", "output_index": 0, "item": reasoning},
		{"type": "response.output_item.added", "output_index": 1, "item": ev{"type": "message", "id": "msg_1", "role": "assistant", "content": []any{}}},
		{"type": "response.content_part.added", "output_index": 1, "content_index": 0, "item_id": "msg_1", "part": ev{"type": "output_text", "text": ""}},
		{"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "item_id": "msg_1", "delta": "Hel"},
		{"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "item_id": "msg_1", "delta": "lo!"},
		{"type": "response.output_text.done", "output_index": 1, "content_index": 0, "item_id": "msg_1", "text": "Hello!"},
		{"type": "response.content_part.done", "output_index": 1, "content_index": 0, "item_id": "msg_1", "part": ev{"type": "output_text", "text": "Hello!"}},
		{"type": "response.output_item.done", "output_index": 1, "item": message},
		{"type": "response.output_item.added", "output_index": 2, "item": ev{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}},
		{"type": "response.function_call_arguments.delta", "output_index": 2, "item_id": "fc_1", "delta": `{"a":`},
		{"type": "response.function_call_arguments.delta", "output_index": 2, "item_id": "fc_1", "delta": `1}`},
		{"type": "response.function_call_arguments.done", "output_index": 2, "item_id": "fc_1", "arguments": `{"a":1}`},
		{"type": "response.output_item.done", "output_index": 2, "item": call},
		{"type": "response.completed", "response": final},
	}
}

// encode numbers the events from 0 and frames them as received over SSE.
func encode(t *testing.T, evs []ev) []sseEvent {
	t.Helper()
	out := make([]sseEvent, len(evs))
	for i, e := range evs {
		if _, ok := e["sequence_number"]; !ok {
			e["sequence_number"] = i
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = sseEvent{Event: fmt.Sprint(e["type"]), Data: b}
	}
	return out
}

func TestAnalyzeStream(t *testing.T) {
	t.Parallel()
	indexOf := func(evs []ev, typ string) int {
		for i, e := range evs {
			if e["type"] == typ {
				return i
			}
		}
		panic("no " + typ)
	}
	tests := []struct {
		name   string
		mutate func([]ev) []ev
		raw    func([]sseEvent) []sseEvent // applied after encoding
		want   string                      // substring of a reported problem; "" for none
	}{
		{name: "valid"},
		{name: "sequence from 1", mutate: func(evs []ev) []ev {
			for i, e := range evs {
				e["sequence_number"] = i + 1
			}
			return evs
		}, want: "sequence_number = 1, want 0"},
		{name: "null error key", mutate: func(evs []ev) []ev {
			evs[5]["error"] = nil
			return evs
		}, want: `top-level "error" key`},
		{name: "in_progress missing", mutate: func(evs []ev) []ev {
			return append(evs[:1:1], evs[2:]...)
		}, want: "want response.created, response.in_progress"},
		{name: "delta before content part", mutate: func(evs []ev) []ev {
			i := indexOf(evs, "response.output_text.delta")
			evs[i-1], evs[i] = evs[i], evs[i-1]
			return evs
		}, want: "content_part.added must come first"},
		{name: "delta before item added", mutate: func(evs []ev) []ev {
			evs[4]["output_index"] = 1
			return evs
		}, want: "before its response.output_item.added"},
		{name: "item never done", mutate: func(evs []ev) []ev {
			i := indexOf(evs, "response.output_item.done")
			return append(evs[:i:i], evs[i+1:]...)
		}, want: "never got response.output_item.done"},
		{name: "item id changes", mutate: func(evs []ev) []ev {
			evs[12]["item_id"] = "msg_other"
			return evs
		}, want: `item_id "msg_other", want "msg_1"`},
		{name: "final output differs", mutate: func(evs []ev) []ev {
			final := evs[len(evs)-1]["response"].(ev)
			final["output"] = final["output"].([]any)[:2]
			return evs
		}, want: "terminal response has 2 output items"},
		{name: "text done differs", mutate: func(evs []ev) []ev {
			evs[13]["text"] = "Hello"
			return evs
		}, want: "want the concatenated deltas"},
		{name: "arguments at added", mutate: func(evs []ev) []ev {
			evs[16]["item"].(ev)["arguments"] = `{"a":1}`
			return evs
		}, want: "arguments at added"},
		{name: "no terminal", mutate: func(evs []ev) []ev {
			return evs[:len(evs)-1]
		}, want: "last event is response.output_item.done"},
		{name: "response id changes", mutate: func(evs []ev) []ev {
			final := evs[len(evs)-1]["response"].(ev)
			final["id"] = "resp_2"
			return evs
		}, want: `response id "resp_2"`},
		{name: "missing output_index", mutate: func(evs []ev) []ev {
			delete(evs[11], "output_index")
			return evs
		}, want: "item event without output_index"},
		{name: "message added without content", mutate: func(evs []ev) []ev {
			delete(evs[9]["item"].(ev), "content")
			return evs
		}, want: `message needs "content": []`},
		{name: "created output null", mutate: func(evs []ev) []ev {
			evs[0]["response"] = ev{"id": "resp_1", "object": "response", "status": "in_progress", "output": nil}
			return evs
		}, want: "response.output must be an array"},
		{name: "content index skips", mutate: func(evs []ev) []ev {
			for _, i := range []int{10, 11, 12, 13, 14} {
				evs[i]["content_index"] = 1
			}
			return evs
		}, want: "content_index 1, want 0"},
		{name: "done sentinel", raw: func(s []sseEvent) []sseEvent {
			return append(s, sseEvent{Data: []byte("[DONE]")})
		}, want: "[DONE]"},
		{name: "event line mismatch", raw: func(s []sseEvent) []sseEvent {
			s[3].Event = "response.output_text.delta"
			return s
		}, want: "line but data type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			evs := goodStream()
			if tt.mutate != nil {
				evs = tt.mutate(evs)
			}
			sse := encode(t, evs)
			if tt.raw != nil {
				sse = tt.raw(sse)
			}
			res, probs := analyzeStream(sse)
			if tt.want == "" {
				if len(probs) > 0 {
					t.Fatalf("analyzeStream(valid) = %q, want no problems", probs)
				}
				if res.Terminal != "response.completed" || res.Response.outputText() != "Hello!" {
					t.Errorf("result = %s %q, want response.completed \"Hello!\"", res.Terminal, res.Response.outputText())
				}
				return
			}
			for _, p := range probs {
				if strings.Contains(p, tt.want) {
					return
				}
			}
			t.Errorf("analyzeStream problems = %q, want one containing %q", probs, tt.want)
		})
	}
}

func TestParseSSE(t *testing.T) {
	t.Parallel()
	in := ": comment\r\nevent: a\r\ndata: {\"x\":1}\r\n\r\nevent: b\ndata: line1\ndata: line2\n\ndata:nospace\n"
	got, err := parseSSE(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []sseEvent{{"a", []byte(`{"x":1}`)}, {"b", []byte("line1\nline2")}, {"", []byte("nospace")}}
	if len(got) != len(want) {
		t.Fatalf("parseSSE = %q, want %q", got, want)
	}
	for i := range want {
		if got[i].Event != want[i].Event || string(got[i].Data) != string(want[i].Data) {
			t.Errorf("event %d = %q %q, want %q %q", i, got[i].Event, got[i].Data, want[i].Event, want[i].Data)
		}
	}
}

func FuzzParseSSE(f *testing.F) {
	f.Add("event: a\ndata: {}\n\n")
	f.Add(": c\r\ndata: x\r\ndata: y\r\n\r\nevent: z\n")
	f.Add("data\n\nevent\n\n:\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		evs, err := parseSSE(strings.NewReader(in))
		if err != nil {
			return // a line over the scanner's limit
		}
		for _, e := range evs {
			if strings.Contains(e.Event, "\n") {
				t.Errorf("event name %q spans lines", e.Event)
			}
		}
	})
}
