package sim

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/internal/jsonappend"
)

// maxSchemaDepth bounds argument synthesis for deeply nested (or recursive) schemas.
const maxSchemaDepth = 4

// argWriter synthesizes tool-call arguments from a JSON schema, written the way Qwen3 writes them:
// Python json.dumps spacing (", " and ": "), properties in schema order, UTF-8 unescaped.
type argWriter struct {
	b     *strings.Builder
	r     *rand.Rand
	names []string // capitalized words of the user message, used as string values first
}

// writeArguments writes an arguments object for schema (a JSON schema of type object; a missing
// schema gives {}).
func writeArguments(b *strings.Builder, schema gjson.Result, r *rand.Rand, userText string) {
	w := &argWriter{b: b, r: r, names: capitalizedWords(userText)}
	if !schema.IsObject() {
		b.WriteString("{}")
		return
	}
	w.object(schema, 0)
}

func (w *argWriter) value(s gjson.Result, depth int) {
	if alt := s.Get("anyOf.0"); alt.Exists() {
		s = alt
	} else if alt := s.Get("oneOf.0"); alt.Exists() {
		s = alt
	}
	for _, k := range []string{"const", "default", "enum.0"} {
		if v := s.Get(k); v.Exists() {
			w.raw(v)
			return
		}
	}
	switch schemaType(s) {
	case "object":
		if depth >= maxSchemaDepth {
			w.b.WriteString("{}")
			return
		}
		w.object(s, depth+1)
	case "array":
		if depth >= maxSchemaDepth {
			w.b.WriteString("[]")
			return
		}
		n := max(1, min(3, int(s.Get("minItems").Int())))
		w.b.WriteByte('[')
		for i := range n {
			if i > 0 {
				w.b.WriteString(", ")
			}
			w.value(s.Get("items"), depth+1)
		}
		w.b.WriteByte(']')
	case "integer", "number":
		lo, hi := int64(1), int64(0)
		if m := s.Get("minimum"); m.Exists() {
			lo = m.Int()
		}
		hi = lo + 9
		if m := s.Get("maximum"); m.Exists() && m.Int() >= lo {
			hi = m.Int()
		}
		w.b.WriteString(strconv.FormatInt(lo+w.r.Int64N(hi-lo+1), 10))
	case "boolean":
		w.b.WriteString(strconv.FormatBool(w.r.IntN(2) == 0))
	case "null":
		w.b.WriteString("null")
	default:
		writePyJSONString(w.b, w.text(s))
	}
}

func (w *argWriter) object(s gjson.Result, depth int) {
	w.b.WriteByte('{')
	first := true
	s.Get("properties").ForEach(func(k, v gjson.Result) bool {
		if !first {
			w.b.WriteString(", ")
		}
		first = false
		writePyJSONString(w.b, k.String())
		w.b.WriteString(": ")
		w.value(v, depth)
		return true
	})
	w.b.WriteByte('}')
}

// text returns a string value: by format, else the user's next capitalized word, else a word.
func (w *argWriter) text(s gjson.Result) string {
	switch s.Get("format").String() {
	case "date":
		return "2025-01-15"
	case "date-time":
		return "2025-01-15T10:00:00Z"
	case "email":
		return "user@example.com"
	case "uri", "url":
		return "https://example.com/"
	}
	if len(w.names) > 0 {
		n := w.names[0]
		w.names = w.names[1:]
		return n
	}
	return fillerWords[w.r.IntN(len(fillerWords))]
}

// raw writes a JSON value from the schema (const, default, enum) in Python json.dumps spacing.
func (w *argWriter) raw(v gjson.Result) {
	switch {
	case v.IsObject():
		w.b.WriteByte('{')
		first := true
		v.ForEach(func(k, x gjson.Result) bool {
			if !first {
				w.b.WriteString(", ")
			}
			first = false
			writePyJSONString(w.b, k.String())
			w.b.WriteString(": ")
			w.raw(x)
			return true
		})
		w.b.WriteByte('}')
	case v.IsArray():
		w.b.WriteByte('[')
		for i, x := range v.Array() {
			if i > 0 {
				w.b.WriteString(", ")
			}
			w.raw(x)
		}
		w.b.WriteByte(']')
	case v.Type == gjson.String:
		writePyJSONString(w.b, v.String())
	default:
		w.b.WriteString(v.Raw)
	}
}

// schemaType returns the schema's type, the first non-null one of a type list, or a type implied by
// properties/items ("string" otherwise).
func schemaType(s gjson.Result) string {
	t := s.Get("type")
	if t.IsArray() {
		for _, x := range t.Array() {
			if x.String() != "null" {
				return x.String()
			}
		}
		return "null"
	}
	switch {
	case t.Exists():
		return t.String()
	case s.Get("properties").Exists():
		return "object"
	case s.Get("items").Exists():
		return "array"
	}
	return "string"
}

// capitalizedWords returns the words of s that start with an upper-case letter, except the first
// word, trimmed of punctuation: the names a user message mentions ("weather in Paris" → Paris).
func capitalizedWords(s string) []string {
	var out []string
	for i, f := range strings.Fields(s) {
		f = strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
		r, _ := utf8.DecodeRuneInString(f)
		if i > 0 && unicode.IsUpper(r) {
			out = append(out, f)
		}
	}
	return out
}

// writePyJSONString writes s as a JSON string the way Python's json.dumps(ensure_ascii=False) does.
func writePyJSONString(b *strings.Builder, s string) {
	var buf [64]byte
	b.Write(jsonappend.String(buf[:0], s))
}
