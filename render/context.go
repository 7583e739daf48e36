package render

import (
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/internal/jsonappend"
)

// This file holds the JSON side of vLLM's message preprocessing (vllm/entrypoints/chat_utils.py,
// _postprocess_messages) and the tools value as ordered JSON text. jinja.FromJSON decodes these
// keeping key order and Python's number semantics, so nothing passes through map[string]any or
// float64.

// templateArguments mirrors vLLM's _postprocess_messages: a string is json.loads-ed (any JSON
// value it holds is kept, objects in their key order); a string that is not valid JSON (including
// "" and whitespace) becomes {}; an object or array is kept; null, numbers and booleans become {}.
//
// Known divergence: Python's json.loads also accepts the literals NaN, Infinity and -Infinity;
// arguments using them render as {} here.
func templateArguments(raw json.RawMessage) []byte {
	r := gjson.ParseBytes(raw)
	switch {
	case r.Type == gjson.String:
		s := []byte(r.Str)
		if json.Valid(s) {
			return s
		}
		return []byte("{}")
	case r.IsObject(), r.IsArray():
		return raw
	default:
		return []byte("{}")
	}
}

// appendToolsJSON appends [{"type":"function","function":{"name","description","parameters",…},…}]
// with null for an absent description or parameters and extra keys last, as vLLM's tool model
// dumps them.
func appendToolsJSON(dst []byte, tools []Tool) []byte {
	dst = append(dst, '[')
	for i := range tools {
		t := &tools[i]
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, `{"type": "function", "function": {"name": `...)
		dst = appendJSONString(dst, t.Name)
		dst = append(dst, `, "description": `...)
		if t.Description != nil {
			dst = appendJSONString(dst, *t.Description)
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, `, "parameters": `...)
		if t.Parameters != nil {
			dst = append(dst, t.Parameters...)
		} else {
			dst = append(dst, "null"...)
		}
		dst = appendFields(dst, t.FunctionExtra)
		dst = append(dst, '}')
		dst = appendFields(dst, t.Extra)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendFields appends `, "key": value` for each field.
func appendFields(dst []byte, fields []Field) []byte {
	for _, f := range fields {
		dst = append(dst, ", "...)
		dst = appendJSONString(dst, f.Key)
		dst = append(dst, ": "...)
		dst = append(dst, f.Value...)
	}
	return dst
}

// appendJSONString appends s as a JSON string (json.dumps(ensure_ascii=False) spelling).
func appendJSONString(dst []byte, s string) []byte { return jsonappend.String(dst, s) }

// quoteJSON is appendJSONString for one value.
func quoteJSON(s string) string { return string(appendJSONString(nil, s)) }
