package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stitchllm/stitch/store"
)

// TestToolCallsKept checks that judging an input against a kept state (the previous turn's
// input and output scanned onto its own kept state) answers as scanning the whole stored
// conversation again: the same error, or none.
func TestToolCallsKept(t *testing.T) {
	call := func(id string) json.RawMessage {
		return json.RawMessage(`{"type":"function_call","call_id":"` + id + `","name":"f","arguments":"{}"}`)
	}
	incomplete := json.RawMessage(`{"type":"function_call","status":"incomplete","call_id":"c9","name":"f","arguments":"{"}`)
	output := func(id string) json.RawMessage {
		return json.RawMessage(`{"type":"function_call_output","call_id":"` + id + `","output":"ok"}`)
	}
	user := json.RawMessage(`{"type":"message","role":"user","content":"function_call_output call_id c1"}`)
	// Turns of one conversation: each its input then its output items.
	turns := [][2][]json.RawMessage{
		{{user}, {call("c1"), call("c2")}},
		{{output("c1"), output("c2")}, {call("c3")}},
		{{output("c3"), user}, {incomplete}},
		{{user}, {call("c4")}},
		{{output("c4"), output("c4")}, {call("c1")}}, // a call id seen before, called again
	}
	inputs := [][]json.RawMessage{
		{user},
		{output("c1")},
		{output("nope")},
		{output("c4"), call("c5")},
		{output("c1"), call("c5"), output("c5")},
	}
	var stored []json.RawMessage
	var ids []string
	kept := newToolCalls()
	for ti, tr := range turns {
		for ii, in := range inputs {
			fresh := newToolCalls()
			fresh.scan(stored, false)
			want := apiErr(fresh.check(in))
			if got := apiErr(kept.clone().check(in)); got != want {
				t.Errorf("after %d turns, input %d: kept state says %s, a scan of the conversation %s", ti, ii, got, want)
			}
		}
		held, heldOrder := maps.Clone(kept.answered), slices.Clone(kept.order)
		tc := kept.clone()
		if err := tc.check(tr[0]); err != nil {
			t.Fatalf("turn %d refused: %v", ti, err)
		}
		tt := &turn{calls: tc, req: &request{Input: tr[0]}, prevItems: stored, prevIDs: ids}
		var outItems []store.Item
		for i, it := range tr[1] {
			outItems = append(outItems, store.Item{ID: fmt.Sprintf("out_%d_%d", ti, i), Data: it})
		}
		conv := slices.Clone(ids)
		for i := range tr[0] {
			conv = append(conv, fmt.Sprintf("in_%d_%d", ti, i))
		}
		for _, it := range outItems {
			conv = append(conv, it.ID)
		}
		h := nextHistory(tt, conv, outItems)
		if h == nil || len(h.Items) != len(conv) {
			t.Fatalf("turn %d: no history kept", ti)
		}
		if !maps.Equal(kept.answered, held) || !slices.Equal(kept.order, heldOrder) {
			t.Fatalf("turn %d changed the state held for the turn before it", ti)
		}
		stored, ids, kept = h.Items, h.IDs, h.Derived.(*toolCalls)
	}
}

func apiErr(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Param + ": " + ae.Message
	}
	return fmt.Sprint(err)
}
