package server

import (
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
)

// checkHistory refuses the tool-call histories OpenAI refuses (same messages, param "input"
// narrowed to the item): a function_call_output whose call_id answers no earlier function_call of
// the conversation (the previous_response_id chain or this input), and a function_call left without
// its output. A call the model never finished (status "incomplete") needs no output.
func checkHistory(prev, input []json.RawMessage) error {
	type call struct {
		index    int // in input; -1 for the stored chain
		answered bool
	}
	calls := map[string]*call{}
	var order []string
	scan := func(items []json.RawMessage, inInput bool) error {
		for i, raw := range items {
			v := gjson.ParseBytes(raw)
			switch v.Get("type").Str {
			case "function_call":
				if v.Get("status").Str == "incomplete" {
					continue
				}
				id := v.Get("call_id").Str
				if _, seen := calls[id]; !seen {
					order = append(order, id)
				}
				c := &call{index: -1}
				if inInput {
					c.index = i
				}
				calls[id] = c
			case "function_call_output":
				id := v.Get("call_id").Str
				c, ok := calls[id]
				if !ok {
					if !inInput {
						// A stored chain is not re-judged: it was accepted when it was sent.
						continue
					}
					return badRequest(fmt.Sprintf("input[%d].call_id", i), "No tool call found for function call output with call_id %s.", id)
				}
				c.answered = true
			}
		}
		return nil
	}
	if err := scan(prev, false); err != nil {
		return err
	}
	if err := scan(input, true); err != nil {
		return err
	}
	for _, id := range order {
		c := calls[id]
		if c.answered {
			continue
		}
		param := "input"
		if c.index >= 0 {
			param = fmt.Sprintf("input[%d]", c.index)
		}
		return badRequest(param, "No tool output found for function call %s.", id)
	}
	return nil
}
