package jinja

import (
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stitchllm/stitch/internal/pyfmt"
)

type kind uint8

const (
	kUndefined kind = iota
	kNone
	kBool
	kInt
	kBig
	kFloat
	kString
	kList
	kTuple
	kMap
	kFunc
	kNamespace
	kLoop
)

// Value is a template value with Python semantics: None, bool, int
// (arbitrary size), float, str, list, tuple, dict (insertion-ordered),
// callables and Jinja2's Undefined, namespace and loop objects. The zero
// Value is Undefined. Values are immutable once built, so they may be
// shared between goroutines and templates.
type Value struct {
	k kind
	n int64  // bool, int, float bits; for Undefined 1 marks a sandbox refusal
	s string // str; for Undefined the reason it is undefined
	o any    // *big.Int, *listObj, *Map, *funcObj, *loopObj
}

type listObj struct {
	items []Value
	// view is "dict_items", "dict_keys" or "dict_values" for the results
	// of those dict methods, which Python prints differently.
	view string
	// rng is set for range objects, which iterate like lists but print
	// as range(start, stop[, step]) and are not JSON serializable.
	rng *[3]int64
}

type kwArg struct {
	name string
	v    Value
}

// funcObj is a callable: a global, a bound method, a macro or caller.
type funcObj struct {
	name  string
	macro bool
	// def and topLevel identify a macro defined in the template's top frame, which behaves the
	// same in every execution of the template (see sameValue).
	def      *macroDef
	topLevel bool
	call     func(ev *evaluator, args []Value, kw []kwArg) (Value, error)
}

// String returns a str value.
func String(s string) Value { return Value{k: kString, s: s} }

// Bool returns a bool value.
func Bool(b bool) Value {
	if b {
		return Value{k: kBool, n: 1}
	}
	return Value{k: kBool}
}

// None returns Python's None.
func None() Value { return Value{k: kNone} }

// Int returns an int value.
func Int(i int64) Value { return Value{k: kInt, n: i} }

// Float returns a float value.
func Float(f float64) Value { return Value{k: kFloat, n: int64(math.Float64bits(f))} }

// List returns a list of the items; the slice is owned by the Value.
func List(items ...Value) Value { return Value{k: kList, o: &listObj{items: items}} }

func tuple(items ...Value) Value { return Value{k: kTuple, o: &listObj{items: items}} }

func bigValue(b *big.Int) Value {
	if b.IsInt64() {
		return Int(b.Int64())
	}
	return Value{k: kBig, o: b}
}

func undefined(reason string) Value { return Value{k: kUndefined, s: reason} }

// markup is a markupsafe.Markup string (a str marked safe). Printing is
// unchanged (autoescape is off), but `+` and `%` escape the other operand,
// as Markup's operators do.
func markup(s string) Value { return Value{k: kString, s: s, n: 1} }

func (v Value) isMarkup() bool { return v.k == kString && v.n == 1 }

// IsUndefined reports whether v is Undefined.
func (v Value) IsUndefined() bool { return v.k == kUndefined }

func (v Value) float() float64 { return math.Float64frombits(uint64(v.n)) }

func (v Value) list() []Value { return v.o.(*listObj).items }

func (v Value) mapv() *Map { return v.o.(*Map) }

func (v Value) bigInt() *big.Int {
	if v.k == kBig {
		return v.o.(*big.Int)
	}
	return big.NewInt(v.n)
}

func (v Value) isSeq() bool { return v.k == kList || v.k == kTuple }

// isPlain reports whether a list is a real Python list (not a range or
// dict view).
func (v Value) isPlain() bool {
	if v.k != kList {
		return v.k == kTuple
	}
	lo := v.o.(*listObj)
	return lo.view == "" && lo.rng == nil
}

func (v Value) isNumber() bool { return v.k == kBool || v.k == kInt || v.k == kBig || v.k == kFloat }

func (v Value) isInt() bool { return v.k == kBool || v.k == kInt || v.k == kBig }

// Map is an insertion-ordered dict. Keys follow Python dict rules:
// 1, 1.0 and True are the same key.
type Map struct {
	keys []Value
	vals []Value
	idx  map[string]int // built once the map grows beyond linear scan
}

// NewMap returns an empty Map.
func NewMap() *Map { return &Map{} }

// NewMapSize returns an empty Map with room for n entries (one allocation for them all).
func NewMapSize(n int) *Map {
	b := make([]Value, 2*n)
	return &Map{keys: b[:0:n], vals: b[n : n : 2*n]}
}

// MapValue wraps m as a dict Value. m must not be modified afterwards.
func MapValue(m *Map) Value { return Value{k: kMap, o: m} }

// Set sets key to v, keeping the position of an existing key.
func (m *Map) Set(key string, v Value) { m.set(String(key), v) }

// Len returns the number of entries.
func (m *Map) Len() int { return len(m.keys) }

const mapIndexThreshold = 12

// hashable reports whether k can be a dict key (what hashKey accepts), without building the key:
// an attribute or subscript lookup asks this of every key, and hashKey allocates.
func hashable(k Value) bool {
	switch k.k {
	case kString, kNone, kBool, kInt, kBig, kFloat:
		return true
	case kTuple:
		for _, it := range k.list() {
			if !hashable(it) {
				return false
			}
		}
		return true
	}
	return false
}

func hashKey(k Value) (string, bool) {
	switch k.k {
	case kString:
		return "s" + k.s, true
	case kNone:
		return "n", true
	case kBool, kInt:
		return "i" + strconv.FormatInt(k.n, 10), true
	case kBig:
		return "i" + k.bigInt().String(), true
	case kFloat:
		f := k.float()
		if f == math.Trunc(f) && math.Abs(f) < 1e18 {
			return "i" + strconv.FormatInt(int64(f), 10), true
		}
		return "f" + strconv.FormatFloat(f, 'g', -1, 64), true
	case kTuple:
		var b strings.Builder
		b.WriteString("t")
		for _, it := range k.list() {
			h, ok := hashKey(it)
			if !ok {
				return "", false
			}
			b.WriteString(strconv.Itoa(len(h)))
			b.WriteString(":")
			b.WriteString(h)
		}
		return b.String(), true
	}
	return "", false
}

func (m *Map) find(k Value) int {
	if m.idx != nil {
		h, ok := hashKey(k)
		if !ok {
			return -1
		}
		if i, ok := m.idx[h]; ok {
			return i
		}
		return -1
	}
	if k.k == kString {
		for i, mk := range m.keys {
			if mk.k == kString && mk.s == k.s {
				return i
			}
		}
		return -1
	}
	for i, mk := range m.keys {
		if valuesEqual(mk, k) {
			return i
		}
	}
	return -1
}

func (m *Map) set(k, v Value) {
	if i := m.find(k); i >= 0 {
		m.vals[i] = v
		return
	}
	m.keys = append(m.keys, k)
	m.vals = append(m.vals, v)
	if m.idx != nil {
		h, _ := hashKey(k)
		m.idx[h] = len(m.keys) - 1
	} else if len(m.keys) > mapIndexThreshold {
		m.idx = make(map[string]int, len(m.keys)*2)
		for i, mk := range m.keys {
			h, _ := hashKey(mk)
			m.idx[h] = i
		}
	}
}

func (m *Map) get(k Value) (Value, bool) {
	if i := m.find(k); i >= 0 {
		return m.vals[i], true
	}
	return Value{}, false
}

func (m *Map) getStr(k string) (Value, bool) {
	if m.idx == nil {
		for i, mk := range m.keys {
			if mk.k == kString && mk.s == k {
				return m.vals[i], true
			}
		}
		return Value{}, false
	}
	return m.get(String(k))
}

func (m *Map) clone() *Map {
	c := &Map{keys: append([]Value(nil), m.keys...), vals: append([]Value(nil), m.vals...)}
	if m.idx != nil {
		c.idx = make(map[string]int, len(m.idx))
		for k, v := range m.idx {
			c.idx[k] = v
		}
	}
	return c
}

// truth is Python's bool(v).
func (v Value) truth() bool {
	switch v.k {
	case kUndefined, kNone:
		return false
	case kBool, kInt:
		return v.n != 0
	case kBig:
		return true
	case kFloat:
		return v.float() != 0
	case kString:
		return v.s != ""
	case kList, kTuple:
		return len(v.list()) > 0
	case kMap:
		return v.mapv().Len() > 0
	}
	return true
}

// typeName is Python's type(v).__name__.
func (v Value) typeName() string {
	switch v.k {
	case kUndefined:
		return "Undefined"
	case kNone:
		return "NoneType"
	case kBool:
		return "bool"
	case kInt, kBig:
		return "int"
	case kFloat:
		return "float"
	case kString:
		return "str"
	case kList:
		lo := v.o.(*listObj)
		if lo.view != "" {
			return lo.view
		}
		if lo.rng != nil {
			return "range"
		}
		return "list"
	case kTuple:
		if v.o.(*listObj).view != "" {
			return v.o.(*listObj).view
		}
		return "tuple"
	case kMap:
		return "dict"
	case kFunc:
		if v.o.(*funcObj).macro {
			return "Macro"
		}
		return "builtin_function_or_method"
	case kNamespace:
		return "Namespace"
	case kLoop:
		return "LoopContext"
	}
	return "object"
}

// str is Python's str(v) as Jinja2 prints it.
func (v Value) str() string {
	switch v.k {
	case kUndefined:
		return ""
	case kString:
		return v.s
	}
	var b strings.Builder
	v.writeRepr(&b, false)
	return b.String()
}

// repr is Python's repr(v).
func (v Value) repr() string {
	var b strings.Builder
	v.writeRepr(&b, true)
	return b.String()
}

func (v Value) writeRepr(b *strings.Builder, quote bool) {
	switch v.k {
	case kUndefined:
		if quote {
			b.WriteString("Undefined")
		}
	case kNone:
		b.WriteString("None")
	case kBool:
		if v.n != 0 {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case kInt:
		b.WriteString(strconv.FormatInt(v.n, 10))
	case kBig:
		b.WriteString(v.bigInt().String())
	case kFloat:
		b.WriteString(formatFloat(v.float()))
	case kString:
		if quote && v.n == 1 {
			b.WriteString("Markup(" + pyReprString(v.s) + ")")
		} else if quote {
			b.WriteString(pyReprString(v.s))
		} else {
			b.WriteString(v.s)
		}
	case kList, kTuple:
		lo := v.o.(*listObj)
		if lo.rng != nil {
			b.WriteString("range(" + strconv.FormatInt(lo.rng[0], 10) + ", " + strconv.FormatInt(lo.rng[1], 10))
			if lo.rng[2] != 1 {
				b.WriteString(", " + strconv.FormatInt(lo.rng[2], 10))
			}
			b.WriteString(")")
			return
		}
		open, close := "[", "]"
		if v.k == kTuple {
			open, close = "(", ")"
		}
		if lo.view != "" && v.k == kList {
			b.WriteString(lo.view)
			b.WriteString("([")
			close = "])"
		} else {
			b.WriteString(open)
		}
		for i, it := range lo.items {
			if i > 0 {
				b.WriteString(", ")
			}
			it.writeRepr(b, true)
		}
		if v.k == kTuple && len(lo.items) == 1 {
			b.WriteString(",")
		}
		b.WriteString(close)
	case kMap, kNamespace:
		m := v.mapv()
		if v.k == kNamespace {
			b.WriteString("<Namespace ")
		}
		b.WriteString("{")
		for i := range m.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			m.keys[i].writeRepr(b, true)
			b.WriteString(": ")
			m.vals[i].writeRepr(b, true)
		}
		b.WriteString("}")
		if v.k == kNamespace {
			b.WriteString(">")
		}
	case kFunc:
		f := v.o.(*funcObj)
		if f.macro {
			b.WriteString("<Macro '" + f.name + "'>")
		} else {
			b.WriteString("<built-in function " + f.name + ">")
		}
	case kLoop:
		l := v.o.(*loopObj)
		b.WriteString("<LoopContext " + strconv.Itoa(l.index0+1) + "/" + strconv.Itoa(l.length) + ">")
	}
}

// pyReprString quotes s the way Python's repr(str) does.
func pyReprString(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(hex2(int(r)))
		case r < 0x7f || isPrintable(r):
			b.WriteRune(r)
		case r < 0x100:
			b.WriteString(`\x`)
			b.WriteString(hex2(int(r)))
		case r < 0x10000:
			b.WriteString(`\u`)
			b.WriteString(hex2(int(r >> 8)))
			b.WriteString(hex2(int(r & 0xff)))
		default:
			b.WriteString(`\U`)
			b.WriteString(hex2(int(r >> 24)))
			b.WriteString(hex2(int(r >> 16 & 0xff)))
			b.WriteString(hex2(int(r >> 8 & 0xff)))
			b.WriteString(hex2(int(r & 0xff)))
		}
	}
	b.WriteByte(q)
	return b.String()
}

// isPrintable approximates Python's str.isprintable for one code point.
func isPrintable(r rune) bool {
	if r == ' ' {
		return true
	}
	return unicode.IsPrint(r) && r != utf8.RuneError
}

func hex2(n int) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[n>>4&0xf], digits[n&0xf]})
}

// formatFloat is Python's repr(float).
func formatFloat(f float64) string { return pyfmt.FloatRepr(f) }

// valuesEqual is Python's ==.
func valuesEqual(a, b Value) bool {
	if a.isNumber() && b.isNumber() {
		if a.k == kFloat || b.k == kFloat {
			return toFloat(a) == toFloat(b)
		}
		if a.k == kBig || b.k == kBig {
			return a.bigInt().Cmp(b.bigInt()) == 0
		}
		return a.n == b.n
	}
	if a.k != b.k {
		return false
	}
	switch a.k {
	case kUndefined, kNone:
		return true
	case kString:
		return a.s == b.s
	case kList, kTuple:
		if a.typeName() != b.typeName() {
			return false
		}
		x, y := a.list(), b.list()
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case kMap:
		x, y := a.mapv(), b.mapv()
		if x.Len() != y.Len() {
			return false
		}
		for i, k := range x.keys {
			v, ok := y.get(k)
			if !ok || !valuesEqual(x.vals[i], v) {
				return false
			}
		}
		return true
	}
	return a.o == b.o
}

func toFloat(v Value) float64 {
	switch v.k {
	case kFloat:
		return v.float()
	case kBig:
		f, _ := new(big.Float).SetInt(v.bigInt()).Float64()
		return f
	}
	return float64(v.n)
}

// compareValues is Python's ordering for <, <=, >, >=; it returns -1, 0
// or 1, or a TypeError for unorderable operands.
func compareValues(a, b Value, op string) (int, error) {
	switch {
	case a.isNumber() && b.isNumber():
		if a.k == kFloat || b.k == kFloat {
			x, y := toFloat(a), toFloat(b)
			if math.IsNaN(x) || math.IsNaN(y) {
				return 2, nil // every comparison is false
			}
			switch {
			case x < y:
				return -1, nil
			case x > y:
				return 1, nil
			}
			return 0, nil
		}
		if a.k == kBig || b.k == kBig {
			return a.bigInt().Cmp(b.bigInt()), nil
		}
		switch {
		case a.n < b.n:
			return -1, nil
		case a.n > b.n:
			return 1, nil
		}
		return 0, nil
	case a.k == kString && b.k == kString:
		return strings.Compare(a.s, b.s), nil
	case a.k == b.k && a.isSeq():
		x, y := a.list(), b.list()
		for i := 0; i < len(x) && i < len(y); i++ {
			if valuesEqual(x[i], y[i]) {
				continue
			}
			return compareValues(x[i], y[i], op)
		}
		switch {
		case len(x) < len(y):
			return -1, nil
		case len(x) > len(y):
			return 1, nil
		}
		return 0, nil
	}
	if a.k == kUndefined || b.k == kUndefined {
		return 0, undefinedError(a, b)
	}
	return 0, errf(KindType, "'%s' not supported between instances of '%s' and '%s'", op, a.typeName(), b.typeName())
}

func undefinedError(vs ...Value) *Error {
	for _, v := range vs {
		if v.k == kUndefined {
			if v.n == 1 {
				return errf(KindSecurity, "%s", v.s)
			}
			reason := v.s
			if reason == "" {
				reason = "value is undefined"
			}
			return errf(KindUndefined, "%s", reason)
		}
	}
	return errf(KindUndefined, "value is undefined")
}

// sortValues sorts in place with Python ordering; the first unorderable
// pair is reported.
func sortValues(items []Value, key func(Value) Value, reverse bool) error {
	var err error
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if key != nil {
			a, b = key(a), key(b)
		}
		if reverse {
			a, b = b, a
		}
		c, e := compareValues(a, b, "<")
		if e != nil && err == nil {
			err = e
		}
		return c == -1
	})
	return err
}

// runeLen is len(str) in code points.
func runeLen(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return utf8.RuneCountInString(s)
		}
	}
	return len(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
