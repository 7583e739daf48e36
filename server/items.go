package server

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// listedItem returns a stored item in the shape GET /v1/responses/{id}/input_items lists items:
// message content as an array of parts (a string becomes one input_text part, output_text for the
// assistant), and a status on messages and function calls and outputs ("completed" unless the
// item carries its own). Items are stored as the client sent them (their bytes reach the chat
// template again); only the listing is reshaped. Keys keep their order; new ones come last.
func listedItem(raw []byte) []byte {
	v := gjson.ParseBytes(raw)
	out := raw
	set := func(path string, value any) {
		if b, err := sjson.SetBytes(out, path, value); err == nil {
			out = b
		}
	}
	setRaw := func(path, value string) {
		if b, err := sjson.SetRawBytes(out, path, []byte(value)); err == nil {
			out = b
		}
	}
	switch v.Get("type").Str {
	case "message":
		if c := v.Get("content"); c.Type == gjson.String {
			part := `{"type":"input_text","text":` + string(appendJSONString(nil, c.Str)) + `}`
			if v.Get("role").Str == "assistant" {
				part = `{"type":"output_text","annotations":[],"text":` + string(appendJSONString(nil, c.Str)) + `}`
			}
			setRaw("content", "["+part+"]")
		}
	case "function_call", "function_call_output":
	default:
		return raw
	}
	if s := v.Get("status"); !s.Exists() || s.Type == gjson.Null {
		set("status", "completed")
	}
	return out
}
