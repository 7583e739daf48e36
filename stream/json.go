package stream

import (
	"strconv"

	"github.com/stitchllm/stitch/internal/jsonappend"
)

// appendString appends s as a JSON string without HTML escaping, with U+2028 and U+2029 escaped
// for JavaScript consumers (what encoding/json does minus the HTML escapes).
func appendString(dst []byte, s string) []byte { return jsonappend.StringJS(dst, s) }

// appendKey appends `"key":` for a key that needs no escaping.
func appendKey(dst []byte, key string) []byte {
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

func appendInt(dst []byte, n int) []byte {
	return strconv.AppendInt(dst, int64(n), 10)
}

// appendRaw appends a raw JSON value, or def when raw is empty.
func appendRaw(dst []byte, raw []byte, def string) []byte {
	if len(raw) == 0 {
		return append(dst, def...)
	}
	return append(dst, raw...)
}
