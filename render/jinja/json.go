package jinja

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stitchllm/stitch/internal/jsonappend"
	"github.com/stitchllm/stitch/internal/pyfmt"
)

// FromJSON parses JSON the way Python's json.loads does: objects keep key
// order (a repeated key keeps its first position and its last value),
// integer literals become ints of any size, literals with a fraction or
// exponent become float64 (so "1E400" is inf and "1.0" prints as 1.0),
// and NaN, Infinity and -Infinity are accepted. A lone UTF-16 surrogate
// escape, which Python keeps, becomes U+FFFD.
func FromJSON(data []byte) (Value, error) {
	d := &jsonDecoder{s: string(data)}
	d.ws()
	v, err := d.value(0)
	if err != nil {
		return Value{}, err
	}
	d.ws()
	if d.p != len(d.s) {
		return Value{}, d.fail("Extra data")
	}
	return v, nil
}

type jsonDecoder struct {
	s string
	p int
}

func (d *jsonDecoder) fail(msg string) error {
	return errf(KindValue, "%s: char %d", msg, d.p)
}

func (d *jsonDecoder) ws() {
	for d.p < len(d.s) {
		switch d.s[d.p] {
		case ' ', '\t', '\n', '\r':
			d.p++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value(depth int) (Value, error) {
	if depth > 10000 {
		return Value{}, d.fail("nesting too deep")
	}
	if d.p >= len(d.s) {
		return Value{}, d.fail("Expecting value")
	}
	switch c := d.s[d.p]; {
	case c == '{':
		d.p++
		m := NewMap()
		d.ws()
		if d.p < len(d.s) && d.s[d.p] == '}' {
			d.p++
			return MapValue(m), nil
		}
		for {
			d.ws()
			if d.p >= len(d.s) || d.s[d.p] != '"' {
				return Value{}, d.fail("Expecting property name enclosed in double quotes")
			}
			k, err := d.str()
			if err != nil {
				return Value{}, err
			}
			d.ws()
			if d.p >= len(d.s) || d.s[d.p] != ':' {
				return Value{}, d.fail("Expecting ':' delimiter")
			}
			d.p++
			d.ws()
			v, err := d.value(depth + 1)
			if err != nil {
				return Value{}, err
			}
			m.Set(k, v)
			d.ws()
			if d.p < len(d.s) && d.s[d.p] == ',' {
				d.p++
				continue
			}
			if d.p < len(d.s) && d.s[d.p] == '}' {
				d.p++
				return MapValue(m), nil
			}
			return Value{}, d.fail("Expecting ',' delimiter")
		}
	case c == '[':
		d.p++
		var items []Value
		d.ws()
		if d.p < len(d.s) && d.s[d.p] == ']' {
			d.p++
			return List(items...), nil
		}
		for {
			d.ws()
			v, err := d.value(depth + 1)
			if err != nil {
				return Value{}, err
			}
			items = append(items, v)
			d.ws()
			if d.p < len(d.s) && d.s[d.p] == ',' {
				d.p++
				continue
			}
			if d.p < len(d.s) && d.s[d.p] == ']' {
				d.p++
				return List(items...), nil
			}
			return Value{}, d.fail("Expecting ',' delimiter")
		}
	case c == '"':
		s, err := d.str()
		return String(s), err
	case c == '-' || (c >= '0' && c <= '9'):
		if strings.HasPrefix(d.s[d.p:], "-Infinity") {
			d.p += 9
			return Float(math.Inf(-1)), nil
		}
		return d.number()
	}
	for _, lit := range []struct {
		s string
		v Value
	}{{"null", None()}, {"true", Bool(true)}, {"false", Bool(false)}, {"NaN", Float(math.NaN())}, {"Infinity", Float(math.Inf(1))}} {
		if strings.HasPrefix(d.s[d.p:], lit.s) {
			d.p += len(lit.s)
			return lit.v, nil
		}
	}
	return Value{}, d.fail("Expecting value")
}

func (d *jsonDecoder) number() (Value, error) {
	s, start := d.s, d.p
	p := start
	if s[p] == '-' {
		p++
	}
	if p >= len(s) || !isDigit(s[p]) {
		return Value{}, d.fail("Expecting value")
	}
	if s[p] == '0' {
		p++
	} else {
		for p < len(s) && isDigit(s[p]) {
			p++
		}
	}
	isFloat := false
	if p+1 < len(s) && s[p] == '.' && isDigit(s[p+1]) {
		isFloat = true
		p++
		for p < len(s) && isDigit(s[p]) {
			p++
		}
	}
	if p < len(s) && (s[p] == 'e' || s[p] == 'E') {
		q := p + 1
		if q < len(s) && (s[q] == '+' || s[q] == '-') {
			q++
		}
		if q < len(s) && isDigit(s[q]) {
			isFloat = true
			for q < len(s) && isDigit(s[q]) {
				q++
			}
			p = q
		}
	}
	d.p = p
	lit := s[start:p]
	if isFloat {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil && !math.IsInf(f, 0) && f != 0 {
			return Value{}, d.fail("bad number")
		}
		return Float(f), nil
	}
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return Int(i), nil
	}
	b, _ := new(big.Int).SetString(lit, 10)
	return bigValue(b), nil
}

func (d *jsonDecoder) str() (string, error) {
	d.p++ // opening quote
	var b strings.Builder
	s := d.s
	for {
		start := d.p
		for d.p < len(s) && s[d.p] != '"' && s[d.p] != '\\' && s[d.p] >= 0x20 {
			d.p++
		}
		b.WriteString(s[start:d.p])
		if d.p >= len(s) {
			return "", d.fail("Unterminated string starting at")
		}
		switch c := s[d.p]; {
		case c == '"':
			d.p++
			return b.String(), nil
		case c < 0x20:
			return "", d.fail("Invalid control character at")
		}
		// backslash
		if d.p+1 >= len(s) {
			return "", d.fail("Unterminated string starting at")
		}
		e := s[d.p+1]
		d.p += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return "", d.fail("Invalid \\uXXXX escape")
			}
			if utf16.IsSurrogate(r) && r < 0xdc00 && strings.HasPrefix(s[d.p:], `\u`) {
				save := d.p
				d.p += 2
				r2, ok := d.hex4()
				if ok && r2 >= 0xdc00 && r2 < 0xe000 {
					r = utf16.DecodeRune(r, r2)
				} else {
					d.p = save
				}
			}
			if utf16.IsSurrogate(r) {
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			d.p--
			return "", d.fail("Invalid \\escape")
		}
	}
}

func (d *jsonDecoder) hex4() (rune, bool) {
	if !isHexN(d.s[d.p:], 4) {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		r = r*16 + rune(hexVal(d.s[d.p+i]))
	}
	d.p += 4
	return r, true
}

// jsonOptions are the keyword arguments of transformers' tojson filter.
type jsonOptions struct {
	indent     string
	hasIndent  bool
	itemSep    string
	keySep     string
	sortKeys   bool
	ensureASCI bool
	scratch    []byte // writeJSONString's buffer
}

// dumpJSON is Python's json.dumps with the given options.
func dumpJSON(v Value, o *jsonOptions) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, v, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

// writeJSONString writes s as json.dumps does (ensure_ascii or not).
func writeJSONString(b *strings.Builder, o *jsonOptions, s string) {
	if o.ensureASCI {
		o.scratch = jsonappend.StringASCII(o.scratch[:0], s)
	} else {
		o.scratch = jsonappend.String(o.scratch[:0], s)
	}
	b.Write(o.scratch)
}

func jsonFloat(f float64) string { return pyfmt.DumpsFloat(f) }

func writeJSONNewline(b *strings.Builder, o *jsonOptions, level int) {
	b.WriteByte('\n')
	for i := 0; i < level; i++ {
		b.WriteString(o.indent)
	}
}

func writeJSON(b *strings.Builder, v Value, o *jsonOptions, level int) error {
	if level > 1000 {
		return errf(KindRecursion, "maximum recursion depth exceeded while encoding a JSON object")
	}
	switch v.k {
	case kNone:
		b.WriteString("null")
	case kBool:
		if v.n != 0 {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case kInt, kBig:
		b.WriteString(v.str())
	case kFloat:
		b.WriteString(jsonFloat(v.float()))
	case kString:
		writeJSONString(b, o, v.s)
	case kList, kTuple:
		if !v.isPlain() {
			return errf(KindType, "Object of type %s is not JSON serializable", v.typeName())
		}
		items := v.list()
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			if o.hasIndent {
				writeJSONNewline(b, o, level+1)
			}
			if err := writeJSON(b, it, o, level+1); err != nil {
				return err
			}
		}
		if o.hasIndent {
			writeJSONNewline(b, o, level)
		}
		b.WriteByte(']')
	case kMap:
		m := v.mapv()
		if m.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		order := make([]int, m.Len())
		for i := range order {
			order[i] = i
		}
		if o.sortKeys {
			keys := make([]Value, len(order))
			for i := range order {
				keys[i] = tuple(m.keys[i], Int(int64(i)))
			}
			if err := sortValues(keys, func(v Value) Value { return v.list()[0] }, false); err != nil {
				return err
			}
			for i, k := range keys {
				order[i] = int(k.list()[1].n)
			}
		}
		b.WriteByte('{')
		for n, i := range order {
			k := m.keys[i]
			var ks string
			switch k.k {
			case kString:
				ks = k.s
			case kFloat:
				ks = jsonFloat(k.float())
			case kBool:
				ks = "false"
				if k.n != 0 {
					ks = "true"
				}
			case kNone:
				ks = "null"
			case kInt, kBig:
				ks = k.str()
			default:
				return errf(KindType, "keys must be str, int, float, bool or None, not %s", k.typeName())
			}
			if n > 0 {
				b.WriteString(o.itemSep)
			}
			if o.hasIndent {
				writeJSONNewline(b, o, level+1)
			}
			writeJSONString(b, o, ks)
			b.WriteString(o.keySep)
			if err := writeJSON(b, m.vals[i], o, level+1); err != nil {
				return err
			}
		}
		if o.hasIndent {
			writeJSONNewline(b, o, level)
		}
		b.WriteByte('}')
	default:
		return errf(KindType, "Object of type %s is not JSON serializable", v.typeName())
	}
	return nil
}

// VarsFromJSON parses a JSON object, as FromJSON does, into template
// variables for Execute.
func VarsFromJSON(data []byte) (map[string]Value, error) {
	v, err := FromJSON(data)
	if err != nil {
		return nil, err
	}
	if v.k != kMap {
		return nil, errf(KindType, "template variables must be a JSON object, not %s", v.typeName())
	}
	m := v.mapv()
	vars := make(map[string]Value, m.Len())
	for i, k := range m.keys {
		vars[k.s] = m.vals[i]
	}
	return vars, nil
}
