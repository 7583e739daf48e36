package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/tidwall/gjson"
)

// checkHistory refuses the tool-call histories OpenAI refuses (same messages, param "input"
// narrowed to the item): a function_call_output whose call_id answers no earlier function_call of
// the conversation (the previous_response_id chain or this input), and a function_call left without
// its output. A call the model never finished (status "incomplete") needs no output.
func checkHistory(prev, input []json.RawMessage) error {
	tc := newToolCalls()
	tc.scan(prev, false)
	return tc.check(input)
}

// toolCalls is what checkHistory knows of a conversation's function calls. The state after a
// response's whole conversation is kept with its hot entry (prepare.History.Derived), so the next
// turn checks its input against it without scanning the earlier items again; it is then only
// read, and a turn works on a clone.
type toolCalls struct {
	// answered maps every call_id of a (complete) function_call seen to whether an output
	// answered it since.
	answered map[string]bool
	// order holds the call_ids in the order first seen (its capacity clipped: an append copies).
	order []string
	// index maps the call_ids of this request's input to their input index (nil outside check).
	index map[string]int
}

func newToolCalls() *toolCalls { return &toolCalls{answered: map[string]bool{}} }

// clone returns a copy of a kept state that a turn may add to.
func (tc *toolCalls) clone() *toolCalls {
	return &toolCalls{answered: maps.Clone(tc.answered), order: slices.Clip(tc.order)}
}

// kept returns tc as the state to keep after the request's input: without the input indexes.
func (tc *toolCalls) kept() *toolCalls {
	return &toolCalls{answered: tc.answered, order: slices.Clip(tc.order)}
}

// bytes estimates the memory tc holds (prepare.History.DerivedBytes).
func (tc *toolCalls) bytes() int {
	n := 64 + 16*cap(tc.order)
	for id := range tc.answered {
		n += 2*len(id) + 48
	}
	return n
}

// scan adds items to the state. Items of the stored chain are not re-judged (they were accepted
// when sent): an output without its call is skipped there; in the input it is refused.
func (tc *toolCalls) scan(items []json.RawMessage, inInput bool) error {
	for i, raw := range items {
		// GetBytes reads the item in place: ParseBytes would copy every stored item first.
		switch gjson.GetBytes(raw, "type").Str {
		case "function_call":
			if gjson.GetBytes(raw, "status").Str == "incomplete" {
				continue
			}
			id := gjson.GetBytes(raw, "call_id").Str
			if _, seen := tc.answered[id]; !seen {
				tc.order = append(tc.order, id)
			}
			tc.answered[id] = false
			if inInput {
				tc.index[id] = i
			} else {
				delete(tc.index, id)
			}
		case "function_call_output":
			id := gjson.GetBytes(raw, "call_id").Str
			if _, ok := tc.answered[id]; !ok {
				if !inInput {
					continue
				}
				return badRequest(fmt.Sprintf("input[%d].call_id", i), "No tool call found for function call output with call_id %s.", id)
			}
			tc.answered[id] = true
		}
	}
	return nil
}

// check adds the request's input to the state of the conversation before it and refuses what
// checkHistory refuses.
func (tc *toolCalls) check(input []json.RawMessage) error {
	tc.index = map[string]int{}
	defer func() { tc.index = nil }()
	if err := tc.scan(input, true); err != nil {
		return err
	}
	for _, id := range tc.order {
		if tc.answered[id] {
			continue
		}
		param := "input"
		if i, ok := tc.index[id]; ok {
			param = fmt.Sprintf("input[%d]", i)
		}
		return badRequest(param, "No tool output found for function call %s.", id)
	}
	return nil
}
