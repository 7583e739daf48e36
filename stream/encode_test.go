package stream_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stitchllm/stitch/stream"
)

func TestEncoder(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	enc := stream.NewEncoder(&b)
	events := []stream.Event{
		&stream.TextDeltaEvent{Type: stream.EventOutputTextDelta, SequenceNumber: 0, ItemID: "msg_1", Delta: "Hi\n\"x\""},
		&stream.ArgumentsDeltaEvent{SequenceNumber: 1, ItemID: "fc_1", OutputIndex: 0, Delta: `{"a": 1`},
		&stream.ContentPartEvent{Type: stream.EventContentPartAdded, SequenceNumber: 2, ItemID: "rs_1", Part: stream.ContentPart{Type: stream.PartReasoningText}},
	}
	if err := enc.EncodeAll(events); err != nil {
		t.Fatal(err)
	}
	want := "event: response.output_text.delta\n" +
		`data: {"type":"response.output_text.delta","sequence_number":0,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi\n\"x\"","logprobs":[]}` + "\n\n" +
		"event: response.function_call_arguments.delta\n" +
		`data: {"type":"response.function_call_arguments.delta","sequence_number":1,"item_id":"fc_1","output_index":0,"delta":"{\"a\": 1"}` + "\n\n" +
		"event: response.content_part.added\n" +
		`data: {"type":"response.content_part.added","sequence_number":2,"item_id":"rs_1","output_index":0,"content_index":0,"part":{"type":"reasoning_text","text":""}}` + "\n\n"
	if got := b.String(); got != want {
		t.Errorf("Encode wrote\n%s\nwant\n%s", got, want)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("client gone")
}

func TestEncoderStickyError(t *testing.T) {
	t.Parallel()
	w := &failWriter{}
	enc := stream.NewEncoder(w)
	ev := &stream.TextDeltaEvent{Type: stream.EventOutputTextDelta, Delta: "x"}
	if err := enc.Encode(ev); err == nil {
		t.Fatal("want error")
	}
	if err := enc.Encode(ev); err == nil || w.n != 1 {
		t.Errorf("second Encode: err %v, writes %d; want sticky error and no write", err, w.n)
	}
}

// TestEncodeAllocs pins the allocation budget of the hot path: encoding a
// delta event allocates nothing once the buffer has grown.
func TestEncodeAllocs(t *testing.T) {
	enc := stream.NewEncoder(discard{})
	ev := &stream.TextDeltaEvent{Type: stream.EventOutputTextDelta, SequenceNumber: 12345, ItemID: "msg_0123456789abcdef", OutputIndex: 1, Delta: " world, \"quoted\"\n"}
	args := &stream.ArgumentsDeltaEvent{SequenceNumber: 7, ItemID: "fc_1", Delta: `"city": "Paris"`}
	if n := testing.AllocsPerRun(200, func() { _ = enc.Encode(ev); _ = enc.Encode(args) }); n != 0 {
		t.Errorf("Encode allocates %v times per delta pair, want 0", n)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestResponseJSONShape(t *testing.T) {
	t.Parallel()
	limit := 100
	r := stream.Response{ID: "resp_1", Status: stream.StatusCompleted, Model: "m", MaxOutputTokens: &limit,
		Output: []stream.Item{
			{ID: "rs_1", Type: stream.ItemReasoning, Status: stream.StatusCompleted, EncryptedContent: "blob"},
			{ID: "fc_1", Type: stream.ItemFunctionCall, Status: stream.StatusCompleted, CallID: "call_1", Name: "f", Arguments: "{}"},
		}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, b)
	}
	for _, k := range []string{"id", "object", "created_at", "status", "error", "incomplete_details", "instructions",
		"max_output_tokens", "model", "output", "parallel_tool_calls", "previous_response_id", "reasoning", "store",
		"temperature", "text", "tool_choice", "tools", "top_p", "truncation", "usage", "user", "metadata"} {
		if _, ok := m[k]; !ok {
			t.Errorf("response JSON lacks %q", k)
		}
	}
	for k, want := range map[string]string{"error": "null", "usage": "null", "tools": "[]", "tool_choice": `"auto"`,
		"metadata": "{}", "truncation": `"disabled"`, "max_output_tokens": "100", "object": `"response"`} {
		if got := string(m[k]); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	// Round trip through the struct tags.
	var back stream.Response
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Output[0].EncryptedContent != "blob" || back.Output[1].Arguments != "{}" || back.Output[1].CallID != "call_1" {
		t.Errorf("round trip lost fields: %+v", back.Output)
	}
}

func BenchmarkEncode(b *testing.B) {
	enc := stream.NewEncoder(discard{})
	ev := &stream.TextDeltaEvent{Type: stream.EventOutputTextDelta, ItemID: "msg_0123456789abcdef", OutputIndex: 1, Delta: " world"}
	b.ReportAllocs()
	n := len(ev.AppendJSON(nil))
	b.SetBytes(int64(n))
	for i := 0; b.Loop(); i++ {
		ev.SequenceNumber = i
		if err := enc.Encode(ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeCompleted(b *testing.B) {
	enc := stream.NewEncoder(discard{})
	text := bytes.Repeat([]byte("All work and no play makes Jack a dull boy. "), 50)
	ev := &stream.ResponseEvent{Type: stream.EventResponseCompleted, Response: &stream.Response{ID: "resp_1", Model: "qwen3", Status: stream.StatusCompleted,
		Output: []stream.Item{{ID: "msg_1", Type: stream.ItemMessage, Status: stream.StatusCompleted, Content: []stream.ContentPart{{Type: stream.PartOutputText, Text: string(text)}}}},
		Usage:  &stream.ResponseUsage{InputTokens: 1000, OutputTokens: 500, TotalTokens: 1500}}}
	b.ReportAllocs()
	b.SetBytes(int64(len(ev.AppendJSON(nil))))
	for b.Loop() {
		if err := enc.Encode(ev); err != nil {
			b.Fatal(err)
		}
	}
}
