package harmony

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// vLLM hands tool schemas to openai_harmony through Python's json and then serde_json (with
// preserve_order). These helpers read raw JSON the way that chain sees it: an object's keys in
// first-appearance order with the last value of a repeated key (Python dict assignment keeps the
// first position), and values printed as serde_json's compact Display prints them.

// member is one key of a JSON object.
type member struct {
	key string
	val gjson.Result
}

// members returns obj's members in first-appearance order, a repeated key holding its last value.
func members(obj gjson.Result) []member {
	if !obj.IsObject() {
		return nil
	}
	var out []member
	obj.ForEach(func(k, v gjson.Result) bool {
		for i := range out {
			if out[i].key == k.Str {
				out[i].val = v
				return true
			}
		}
		out = append(out, member{k.Str, v})
		return true
	})
	return out
}

// field returns obj[key] (the last occurrence) and whether obj is an object holding key.
func field(obj gjson.Result, key string) (gjson.Result, bool) {
	if !obj.IsObject() {
		return gjson.Result{}, false
	}
	// The members are walked on the raw bytes and only the value taken is parsed: gjson's
	// ForEach parses every value, unescaping a tool output's whole text once per field read.
	raw := obj.Raw
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return gjson.Result{}, false
	}
	var found string
	ok := false
	for i = skipSpace(raw, i+1); i < len(raw) && raw[i] != '}'; {
		if raw[i] != '"' {
			return gjson.Result{}, false
		}
		end := stringEnd(raw, i)
		if end < 0 {
			return gjson.Result{}, false
		}
		k := raw[i+1 : end-1]
		if strings.IndexByte(k, '\\') >= 0 {
			k = gjson.Parse(raw[i:end]).Str
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return gjson.Result{}, false
		}
		vs := skipSpace(raw, i+1)
		ve := valueEnd(raw, vs)
		if ve < 0 {
			return gjson.Result{}, false
		}
		if k == key {
			found, ok = raw[vs:ve], true
		}
		i = skipSpace(raw, ve)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if !ok {
		return gjson.Result{}, false
	}
	return gjson.Parse(found), true
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the offset after the JSON string starting at s[i] ('"'), -1 if unterminated.
// A quote ends it unless an odd number of backslashes precedes it.
func stringEnd(s string, i int) int {
	for j := i + 1; j < len(s); {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		bs := 0
		for b := j - 1; b > i && s[b] == '\\'; b-- {
			bs++
		}
		if bs%2 == 0 {
			return j + 1
		}
		j++
	}
	return -1
}

// valueEnd returns the offset after the JSON value starting at s[i], -1 if malformed.
func valueEnd(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				e := stringEnd(s, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(s) && !strings.ContainsRune(",}] \t\n\r", rune(s[j])) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// fieldString returns obj[key] when it is a string.
func fieldString(obj gjson.Result, key string) (string, bool) {
	v, ok := field(obj, key)
	if !ok || v.Type != gjson.String {
		return "", false
	}
	return v.Str, true
}

// serdeJSON prints v as serde_json's Display does: compact, strings escaped the serde way,
// numbers as serde_json holds them after Python's json (integers within u64/i64 as written,
// everything else as the nearest f64 in ryu's shortest form).
func serdeJSON(v gjson.Result) string {
	var b strings.Builder
	writeSerde(&b, v)
	return b.String()
}

func writeSerde(b *strings.Builder, v gjson.Result) {
	switch {
	case v.Type == gjson.String:
		writeSerdeString(b, v.Str)
	case v.Type == gjson.Number:
		b.WriteString(serdeNumber(v.Raw))
	case v.Type == gjson.True:
		b.WriteString("true")
	case v.Type == gjson.False:
		b.WriteString("false")
	case v.IsObject():
		b.WriteByte('{')
		for i, m := range members(v) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeSerdeString(b, m.key)
			b.WriteByte(':')
			writeSerde(b, m.val)
		}
		b.WriteByte('}')
	case v.IsArray():
		b.WriteByte('[')
		i := 0
		v.ForEach(func(_, e gjson.Result) bool {
			if i > 0 {
				b.WriteByte(',')
			}
			i++
			writeSerde(b, e)
			return true
		})
		b.WriteByte(']')
	default:
		b.WriteString("null")
	}
}

func writeSerdeString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

var (
	maxU64 = new(big.Int).SetUint64(math.MaxUint64)
	minI64 = big.NewInt(math.MinInt64)
)

// serdeNumber prints a JSON number literal as serde_json holds it after Python's json.
func serdeNumber(raw string) string {
	if !strings.ContainsAny(raw, ".eE") {
		if n, ok := new(big.Int).SetString(raw, 10); ok && n.Cmp(minI64) >= 0 && n.Cmp(maxU64) <= 0 {
			return n.String()
		}
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil && !math.IsInf(f, 0) {
		return "null"
	}
	return ryuFormat(f)
}

// ryuFormat prints a float as serde_json does (the ryu crate's shortest round-trip form):
// "1.0", "0.001", "1e16", "1.5e-7"; non-finite values print as null.
func ryuFormat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "null"
	}
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	var b strings.Builder
	if f < 0 {
		b.WriteByte('-')
		f = -f
	}
	// Shortest digits d1.d2d3…e±X: value = 0.DIGITS × 10^kk.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	length := len(digits)
	kk := x + 1
	switch {
	case kk >= length && kk <= 16:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", kk-length))
		b.WriteString(".0")
	case kk > 0 && kk <= 16:
		b.WriteString(digits[:kk])
		b.WriteByte('.')
		b.WriteString(digits[kk:])
	case kk > -5 && kk <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -kk))
		b.WriteString(digits)
	case length == 1:
		b.WriteString(digits)
		b.WriteByte('e')
		b.WriteString(strconv.Itoa(kk - 1))
	default:
		b.WriteString(digits[:1])
		b.WriteByte('.')
		b.WriteString(digits[1:])
		b.WriteByte('e')
		b.WriteString(strconv.Itoa(kk - 1))
	}
	return b.String()
}
