package stream_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stitchllm/stitch/stream"
)

// wireEvent is the union of the fields checkStream reads.
type wireEvent struct {
	Type           string           `json:"type"`
	SequenceNumber *int             `json:"sequence_number"`
	OutputIndex    *int             `json:"output_index"`
	ContentIndex   *int             `json:"content_index"`
	ItemID         string           `json:"item_id"`
	Delta          *string          `json:"delta"`
	Text           *string          `json:"text"`
	Arguments      *string          `json:"arguments"`
	Item           *stream.Item     `json:"item"`
	Response       *stream.Response `json:"response"`
}

// checkStream checks the client requirements of FACTS-clients.md on an encoded
// Responses event stream.
func checkStream(t *testing.T, sse []byte) {
	t.Helper()
	dec := stream.NewDecoder(bytes.NewReader(sse))
	var events []wireEvent
	for {
		m, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("re-decode own stream: %v", err)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(m.Data, &top); err != nil {
			t.Fatalf("event data is not a JSON object: %v\n%s", err, m.Data)
		}
		if _, ok := top["error"]; ok {
			t.Errorf("event %s has a top-level error key", m.Event)
		}
		var ev wireEvent
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatalf("event: %v\n%s", err, m.Data)
		}
		if ev.Type != string(m.Event) {
			t.Errorf("event: %s but type %q", m.Event, ev.Type)
		}
		events = append(events, ev)
	}
	if bytes.HasPrefix(sse, []byte("data: [DONE]")) || bytes.Contains(sse, []byte("\ndata: [DONE]")) {
		t.Errorf("stream contains [DONE]")
	}
	if len(events) < 3 {
		t.Fatalf("only %d events", len(events))
	}
	for i, ev := range events {
		if ev.SequenceNumber == nil || *ev.SequenceNumber != i {
			t.Errorf("event %d (%s): sequence_number %v", i, ev.Type, ev.SequenceNumber)
		}
	}
	if events[0].Type != stream.EventResponseCreated || events[1].Type != stream.EventResponseInProgress {
		t.Errorf("stream starts with %s, %s", events[0].Type, events[1].Type)
	}
	last := events[len(events)-1]
	switch last.Type {
	case stream.EventResponseCompleted, stream.EventResponseIncomplete, stream.EventResponseFailed:
	default:
		t.Fatalf("stream ends with %s", last.Type)
	}
	final := last.Response
	if final == nil || final.ID != events[0].Response.ID {
		t.Fatalf("final response id differs from response.created")
	}

	type itemState struct {
		id, typ    string
		partAdded  bool
		partDone   bool
		text       string
		doneText   *string
		itemDone   *stream.Item
		seenDeltas bool
	}
	var items []*itemState
	get := func(ev wireEvent) *itemState {
		if ev.OutputIndex == nil || *ev.OutputIndex >= len(items) {
			t.Fatalf("%s (seq %d) before output_item.added", ev.Type, *ev.SequenceNumber)
		}
		it := items[*ev.OutputIndex]
		if ev.ItemID != "" && ev.ItemID != it.id {
			t.Errorf("%s item_id %s, want %s", ev.Type, ev.ItemID, it.id)
		}
		if it.itemDone != nil {
			t.Errorf("%s after output_item.done of %s", ev.Type, it.id)
		}
		return it
	}
	for _, ev := range events[2 : len(events)-1] {
		switch ev.Type {
		case stream.EventOutputItemAdded:
			if ev.OutputIndex == nil || *ev.OutputIndex != len(items) {
				t.Fatalf("output_item.added output_index %v, want %d", ev.OutputIndex, len(items))
			}
			for _, prev := range items {
				if prev.itemDone == nil {
					t.Errorf("item %s added while %s still open", ev.Item.ID, prev.id)
				}
			}
			items = append(items, &itemState{id: ev.Item.ID, typ: ev.Item.Type})
		case stream.EventContentPartAdded:
			it := get(ev)
			if ev.ContentIndex == nil || *ev.ContentIndex != 0 {
				t.Errorf("content_index %v", ev.ContentIndex)
			}
			it.partAdded = true
		case stream.EventOutputTextDelta, stream.EventReasoningTextDelta:
			it := get(ev)
			if !it.partAdded || it.partDone {
				t.Errorf("%s outside its content part", ev.Type)
			}
			if ev.ContentIndex == nil {
				t.Errorf("%s without content_index", ev.Type)
			}
			it.text += *ev.Delta
			it.seenDeltas = true
		case stream.EventFunctionArgumentsDelta:
			it := get(ev)
			it.text += *ev.Delta
		case stream.EventOutputTextDone, stream.EventReasoningTextDone:
			it := get(ev)
			it.doneText = ev.Text
		case stream.EventFunctionArgumentsDone:
			it := get(ev)
			it.doneText = ev.Arguments
		case stream.EventContentPartDone:
			it := get(ev)
			it.partDone = true
		case stream.EventOutputItemDone:
			it := get(ev)
			if it.typ != stream.ItemFunctionCall && (!it.partAdded || !it.partDone) {
				t.Errorf("item %s done without its content part added and done", it.id)
			}
			it.itemDone = ev.Item
		default:
			t.Errorf("unexpected event %s", ev.Type)
		}
	}
	if len(final.Output) != len(items) {
		t.Fatalf("final output has %d items, stream added %d", len(final.Output), len(items))
	}
	for i, it := range items {
		if it.itemDone == nil {
			t.Errorf("item %s has no output_item.done", it.id)
			continue
		}
		if it.doneText == nil || *it.doneText != it.text {
			t.Errorf("item %s: done text %v != concatenated deltas %q", it.id, it.doneText, it.text)
		}
		fin := final.Output[i]
		if fin.ID != it.id || it.itemDone.ID != it.id {
			t.Errorf("item %d id: added %s, done %s, final %s", i, it.id, it.itemDone.ID, fin.ID)
		}
		got := fin.Arguments
		if fin.Type != stream.ItemFunctionCall {
			got = fin.Text()
		}
		if got != it.text {
			t.Errorf("item %s: final text %q != streamed %q", it.id, got, it.text)
		}
		if fin.Type == stream.ItemFunctionCall && fin.Status == stream.StatusCompleted && !json.Valid([]byte(fin.Arguments)) {
			t.Errorf("completed function_call %s has invalid arguments %q", fin.ID, fin.Arguments)
		}
	}
}
