package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The wire shapes the checks read; every other field is ignored.
type (
	wireEvent struct {
		Type           string        `json:"type"`
		SequenceNumber *int64        `json:"sequence_number"`
		OutputIndex    *int          `json:"output_index"`
		ContentIndex   *int          `json:"content_index"`
		ItemID         *string       `json:"item_id"`
		Item           *wireItem     `json:"item"`
		Part           *wirePart     `json:"part"`
		Delta          string        `json:"delta"`
		Text           string        `json:"text"`
		Arguments      string        `json:"arguments"`
		Response       *wireResponse `json:"response"`
	}
	wireItem struct {
		ID               string     `json:"id"`
		Type             string     `json:"type"`
		Status           string     `json:"status"`
		Role             string     `json:"role"`
		CallID           string     `json:"call_id"`
		Name             string     `json:"name"`
		Namespace        string     `json:"namespace"`
		Arguments        *string    `json:"arguments"`
		Content          []wirePart `json:"content"`
		Summary          []wirePart `json:"summary"`
		EncryptedContent *string    `json:"encrypted_content"`
	}
	wirePart struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	wireResponse struct {
		ID                 string          `json:"id"`
		Object             string          `json:"object"`
		Status             string          `json:"status"`
		Model              string          `json:"model"`
		PreviousResponseID *string         `json:"previous_response_id"`
		Output             []wireItem      `json:"output"`
		Error              json.RawMessage `json:"error"`
		Usage              *wireUsage      `json:"usage"`
	}
	wireUsage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
)

// streamResult is what a checked stream produced.
type streamResult struct {
	Terminal string       // type of the last event
	Response wireResponse // the response carried by the terminal event
	Events   []wireEvent  // decoded events, in order
	Raw      [][]byte     // the data of each event, parallel to Events
}

// itemState tracks one output item (by output_index) through the stream.
type itemState struct {
	id, typ     string
	done        bool
	args        strings.Builder
	parts       map[int]*partState
	doneItem    wireItem
	callID      string
	name        string
	argsAtStart *string
}

type partState struct {
	typ   string
	done  bool
	text  strings.Builder
	final string // text from the *.done event
}

// checkStream verifies the stream rules of FACTS-clients.md on raw events and returns the
// decoded events with the terminal response. Every violation is reported; a stream too
// broken to inspect further stops the test.
func checkStream(t *testing.T, events []sseEvent) streamResult {
	t.Helper()
	res, problems := analyzeStream(events)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.FailNow()
	}
	return res
}

// problems collects stream rule violations.
type problems []string

func (p *problems) errorf(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// analyzeStream is checkStream without a testing.T: it returns the violations found.
func analyzeStream(events []sseEvent) (streamResult, problems) {
	var t problems
	if len(events) < 3 {
		t.errorf("stream has %d events, want at least created, in_progress and a terminal event", len(events))
		return streamResult{}, t
	}
	var res streamResult
	for i, ev := range events {
		if string(ev.Data) == "[DONE]" {
			t.errorf("event %d: `data: [DONE]` sentinel; the Responses API stream has none", i)
			continue
		}
		var keys map[string]json.RawMessage
		var we wireEvent
		if err := json.Unmarshal(ev.Data, &keys); err != nil {
			t.errorf("event %d: data is not a JSON object: %v: %s", i, err, ev.Data)
			return res, t
		}
		if err := json.Unmarshal(ev.Data, &we); err != nil {
			t.errorf("event %d: decode: %v: %s", i, err, ev.Data)
			return res, t
		}
		res.Events = append(res.Events, we)
		res.Raw = append(res.Raw, ev.Data)
		if we.Type == "" {
			t.errorf("event %d: no type: %s", i, ev.Data)
		}
		if ev.Event != "" && ev.Event != we.Type {
			t.errorf("event %d: `event: %s` line but data type %q", i, ev.Event, we.Type)
		}
		if _, ok := keys["error"]; ok && we.Type != "error" {
			t.errorf("event %d (%s): top-level \"error\" key (the Go SDK aborts on it): %s", i, we.Type, ev.Data)
		}
		if i == 0 && we.Type == "response.created" && !outputIsArray(keys["response"]) {
			t.errorf("event 0 (response.created): response.output must be an array, even empty (the Node stream helper indexes it)")
		}
		if we.SequenceNumber == nil {
			t.errorf("event %d (%s): no sequence_number", i, we.Type)
		} else if *we.SequenceNumber != int64(i) {
			t.errorf("event %d (%s): sequence_number = %d, want %d (from 0, consecutive)", i, we.Type, *we.SequenceNumber, i)
		}
	}
	if len(t) > 0 {
		return res, t
	}
	evs := res.Events
	second := evs[1].Type
	if second == "response.queued" && len(evs) > 3 { // a background response: created, queued, in_progress
		second = evs[2].Type
	}
	if evs[0].Type != "response.created" || second != "response.in_progress" {
		t.errorf("stream starts with %s, %s; want response.created, response.in_progress (response.queued between for background)", evs[0].Type, evs[1].Type)
	}
	last := evs[len(evs)-1]
	res.Terminal = last.Type
	if !isTerminal(last.Type) {
		t.errorf("last event is %s, want response.completed, response.incomplete or response.failed", last.Type)
		return res, t
	}
	if last.Response == nil {
		t.errorf("terminal %s carries no response", last.Type)
		return res, t
	}
	res.Response = *last.Response
	respID := ""
	for i, we := range evs {
		if i < len(evs)-1 && isTerminal(we.Type) {
			t.errorf("event %d: %s before the end of the stream", i, we.Type)
		}
		if strings.HasPrefix(we.Type, "response.") && we.Response != nil {
			if respID == "" {
				respID = we.Response.ID
			}
			if we.Response.ID == "" || we.Response.ID != respID {
				t.errorf("event %d (%s): response id %q, want %q as in response.created", i, we.Type, we.Response.ID, respID)
			}
		}
	}
	items := checkItems(&t, evs)
	checkFinal(&t, res.Response, last.Type, items)
	return res, t
}

// outputIsArray reports whether the response object raw has an "output" array.
func outputIsArray(raw json.RawMessage) bool {
	var r struct {
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return false
	}
	return len(r.Output) > 0 && r.Output[0] == '['
}

func isTerminal(typ string) bool {
	return typ == "response.completed" || typ == "response.incomplete" || typ == "response.failed"
}

// checkItems follows every output item from output_item.added to output_item.done.
func checkItems(t *problems, evs []wireEvent) []*itemState {
	var items []*itemState
	for i, we := range evs {
		where := fmt.Sprintf("event %d (%s)", i, we.Type)
		if we.Type == "response.output_item.added" {
			if we.OutputIndex == nil || we.Item == nil {
				t.errorf("%s: needs output_index and item", where)
				continue
			}
			if *we.OutputIndex != len(items) {
				t.errorf("%s: output_index %d, want %d (next index)", where, *we.OutputIndex, len(items))
				continue
			}
			if we.Item.ID == "" {
				t.errorf("%s: item has no id", where)
			}
			it := &itemState{id: we.Item.ID, typ: we.Item.Type, parts: map[int]*partState{},
				callID: we.Item.CallID, name: we.Item.Name, argsAtStart: we.Item.Arguments}
			if it.typ == "message" && we.Item.Content == nil {
				t.errorf("%s: message needs \"content\": [] at added (the Node stream helper appends to it)", where)
			}
			if it.typ == "function_call" {
				if it.callID == "" || it.name == "" {
					t.errorf("%s: function_call needs call_id and name at added: %+v", where, *we.Item)
				}
				if it.argsAtStart == nil || *it.argsAtStart != "" {
					t.errorf("%s: function_call arguments at added = %v, want \"\"", where, strPtr(it.argsAtStart))
				}
			}
			items = append(items, it)
			continue
		}
		if we.OutputIndex == nil {
			if we.ContentIndex != nil || we.ItemID != nil {
				t.errorf("%s: item event without output_index", where)
			}
			continue
		}
		idx := *we.OutputIndex
		if idx < 0 || idx >= len(items) {
			t.errorf("%s: output_index %d before its response.output_item.added", where, idx)
			continue
		}
		it := items[idx]
		if it.done {
			t.errorf("%s: event for output_index %d after its response.output_item.done", where, idx)
			continue
		}
		if we.ItemID != nil && *we.ItemID != it.id {
			t.errorf("%s: item_id %q, want %q (from output_item.added)", where, *we.ItemID, it.id)
		}
		switch we.Type {
		case "response.output_item.done":
			if we.Item == nil {
				t.errorf("%s: no item", where)
				continue
			}
			if we.Item.ID != it.id || we.Item.Type != it.typ {
				t.errorf("%s: item %s/%s, want %s/%s as added", where, we.Item.Type, we.Item.ID, it.typ, it.id)
			}
			for ci, p := range it.parts {
				if !p.done {
					t.errorf("%s: content part %d never got content_part.done", where, ci)
				}
			}
			it.done, it.doneItem = true, *we.Item
		case "response.content_part.added", "response.content_part.done":
			if we.ContentIndex == nil || we.Part == nil {
				t.errorf("%s: needs content_index and part", where)
				continue
			}
			ci := *we.ContentIndex
			p := it.parts[ci]
			if we.Type == "response.content_part.added" {
				if p != nil {
					t.errorf("%s: content_index %d added twice", where, ci)
					continue
				}
				if ci != len(it.parts) {
					t.errorf("%s: content_index %d, want %d (parts are appended in order)", where, ci, len(it.parts))
				}
				it.parts[ci] = &partState{typ: we.Part.Type}
				continue
			}
			if p == nil || p.done {
				t.errorf("%s: content_index %d not open", where, ci)
				continue
			}
			p.done = true
		case "response.output_text.delta", "response.output_text.done",
			"response.reasoning_text.delta", "response.reasoning_text.done",
			"response.refusal.delta", "response.refusal.done":
			if we.ContentIndex == nil {
				t.errorf("%s: no content_index", where)
				continue
			}
			p := it.parts[*we.ContentIndex]
			if p == nil || p.done {
				t.errorf("%s: content_index %d has no open content_part (content_part.added must come first)", where, *we.ContentIndex)
				continue
			}
			if want := partTypeFor(we.Type); p.typ != want {
				t.errorf("%s: part type %q, want %q", where, p.typ, want)
			}
			if strings.HasSuffix(we.Type, ".delta") {
				p.text.WriteString(we.Delta)
			} else {
				p.final = we.Text
				if we.Type == "response.refusal.done" {
					continue
				}
				if we.Text != p.text.String() {
					t.errorf("%s: text %q, want the concatenated deltas %q", where, we.Text, p.text.String())
				}
			}
		case "response.function_call_arguments.delta":
			if it.typ != "function_call" {
				t.errorf("%s: on a %s item", where, it.typ)
			}
			it.args.WriteString(we.Delta)
		case "response.function_call_arguments.done":
			if we.Arguments != it.args.String() {
				t.errorf("%s: arguments %q, want the concatenated deltas %q", where, we.Arguments, it.args.String())
			}
		}
	}
	for i, it := range items {
		if !it.done {
			t.errorf("item %d (%s %s) never got response.output_item.done", i, it.typ, it.id)
		}
	}
	return items
}

func partTypeFor(eventType string) string {
	switch {
	case strings.HasPrefix(eventType, "response.output_text."):
		return "output_text"
	case strings.HasPrefix(eventType, "response.reasoning_text."):
		return "reasoning_text"
	default:
		return "refusal"
	}
}

// checkFinal compares the terminal response with what the events built.
func checkFinal(t *problems, r wireResponse, terminal string, items []*itemState) {
	if r.Object != "response" {
		t.errorf("terminal response object = %q, want \"response\"", r.Object)
	}
	wantStatus := strings.TrimPrefix(terminal, "response.")
	if r.Status != wantStatus {
		t.errorf("%s carries status %q, want %q", terminal, r.Status, wantStatus)
	}
	if terminal == "response.failed" {
		var e struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(r.Error, &e); err != nil || e.Code == "" || e.Message == "" {
			t.errorf("response.failed needs response.error{code,message}, got %s", r.Error)
		}
	}
	if len(r.Output) != len(items) {
		t.errorf("terminal response has %d output items, the stream added %d", len(r.Output), len(items))
		return
	}
	for i, it := range items {
		out := r.Output[i]
		if out.ID != it.id || out.Type != it.typ {
			t.errorf("output[%d] = %s/%s, stream had %s/%s", i, out.Type, out.ID, it.typ, it.id)
			continue
		}
		if terminal == "response.completed" && (out.Type == "message" || out.Type == "function_call") && out.Status != "completed" {
			t.errorf("output[%d] (%s) status %q in a completed response, want completed", i, out.Type, out.Status)
		}
		switch out.Type {
		case "function_call":
			if out.CallID != it.callID || out.Name != it.name {
				t.errorf("output[%d] call_id/name = %q/%q, stream had %q/%q", i, out.CallID, out.Name, it.callID, it.name)
			}
			if got := strPtr(out.Arguments); got != it.args.String() {
				t.errorf("output[%d] arguments %q, deltas gave %q", i, got, it.args.String())
			}
		case "message", "reasoning":
			for ci, p := range it.parts {
				if ci >= len(out.Content) {
					t.errorf("output[%d] has %d content parts, stream opened index %d", i, len(out.Content), ci)
					continue
				}
				c := out.Content[ci]
				if c.Type != p.typ {
					t.errorf("output[%d].content[%d] type %q, stream had %q", i, ci, c.Type, p.typ)
				}
				if p.typ != "refusal" && c.Text != p.text.String() {
					t.errorf("output[%d].content[%d] text %q, deltas gave %q", i, ci, c.Text, p.text.String())
				}
			}
		}
		if it.doneItem.ID != out.ID || it.doneItem.Type != out.Type {
			t.errorf("output_item.done[%d] = %s/%s, final %s/%s", i, it.doneItem.Type, it.doneItem.ID, out.Type, out.ID)
		}
	}
}

func strPtr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// outputText concatenates the output_text parts of the message items of r.
func (r wireResponse) outputText() string {
	var b strings.Builder
	for _, it := range r.Output {
		if it.Type != "message" {
			continue
		}
		for _, c := range it.Content {
			if c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

// items returns the output items of type typ.
func (r wireResponse) items(typ string) []wireItem {
	var out []wireItem
	for _, it := range r.Output {
		if it.Type == typ {
			out = append(out, it)
		}
	}
	return out
}
