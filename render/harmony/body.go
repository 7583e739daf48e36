package harmony

import (
	"encoding/json"

	"github.com/tidwall/gjson"
)

// RequestFromBody reads the fields of a Responses request body that shape a Harmony prompt:
// instructions, reasoning.effort, input (a string becomes one user item) and tools. It does not
// resolve previous_response_id: a caller continuing a stored conversation prepends the stored
// items to Items itself.
func RequestFromBody(body []byte) (Request, error) {
	if depth(body) >= maxDepth || !gjson.ValidBytes(body) {
		return Request{}, invalid("", "the request body is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return Request{}, invalid("", "the request body must be a JSON object")
	}
	var req Request
	if v, ok := field(root, "instructions"); ok && v.Type != gjson.Null {
		if v.Type != gjson.String {
			return Request{}, invalid("instructions", "must be a string")
		}
		s := v.Str
		req.Instructions = &s
	}
	if r, ok := field(root, "reasoning"); ok && r.IsObject() {
		if e, ok := field(r, "effort"); ok && e.Type != gjson.Null {
			if e.Type != gjson.String {
				return Request{}, invalid("reasoning.effort", "must be a string")
			}
			req.Effort = e.Str
		}
	}
	in, ok := field(root, "input")
	switch {
	case !ok || in.Type == gjson.Null:
		return Request{}, invalid("input", "is required")
	case in.Type == gjson.String:
		item := []byte(`{"role":"user","content":`)
		item = append(item, in.Raw...)
		item = append(item, '}')
		req.Items = []json.RawMessage{item}
	case in.IsArray():
		for _, it := range in.Array() {
			req.Items = append(req.Items, json.RawMessage(it.Raw))
		}
	default:
		return Request{}, invalid("input", "must be a string or an array of items")
	}
	if t, ok := field(root, "tools"); ok {
		req.Tools = json.RawMessage(t.Raw)
	}
	return req, nil
}
