package jinja

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// filterFunc implements one filter: v is the piped value.
type filterFunc func(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error)

// lookupFilter returns the builtin filter name, or nil.
func lookupFilter(name string) filterFunc {
	switch name {
	case "abs":
		return filterAbs
	case "attr":
		return filterAttr
	case "batch":
		return filterBatch
	case "capitalize":
		return strFilter(pyCapitalize)
	case "center":
		return filterCenter
	case "count":
		return filterLength
	case "d":
		return filterDefault
	case "default":
		return filterDefault
	case "dictsort":
		return filterDictsort
	case "e":
		return filterEscape
	case "escape":
		return filterEscape
	case "first":
		return filterFirst
	case "float":
		return filterFloat
	case "format":
		return filterFormat
	case "indent":
		return filterIndent
	case "int":
		return filterInt
	case "items":
		return filterItems
	case "join":
		return filterJoin
	case "last":
		return filterLast
	case "length":
		return filterLength
	case "list":
		return filterList
	case "lower":
		return strFilter(pyLower)
	case "map":
		return filterMap
	case "max":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterMinMax(ev, v, a, kw, 1)
		}
	case "min":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterMinMax(ev, v, a, kw, -1)
		}
	case "reject":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterSelect(ev, v, a, kw, false, false)
		}
	case "rejectattr":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterSelect(ev, v, a, kw, false, true)
		}
	case "replace":
		return filterReplace
	case "reverse":
		return filterReverse
	case "round":
		return filterRound
	case "safe":
		return filterString
	case "select":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterSelect(ev, v, a, kw, true, false)
		}
	case "selectattr":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterSelect(ev, v, a, kw, true, true)
		}
	case "sort":
		return filterSort
	case "string":
		return filterString
	case "striptags":
		return filterStriptags
	case "sum":
		return filterSum
	case "title":
		return strFilter(jinjaTitle)
	case "tojson":
		return filterToJSON
	case "trim":
		return filterTrim
	case "unique":
		return filterUnique
	case "upper":
		return strFilter(pyUpper)
	case "wordcount":
		return filterWordcount
	}
	return nil
}

// softStr is Jinja2's soft_str: str(v), "" for Undefined.
func softStr(v Value) (string, error) {
	return v.str(), nil
}

func strFilter(f func(string) string) filterFunc {
	return func(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
		if len(args) > 0 || len(kw) > 0 {
			return Value{}, errf(KindType, "filter takes 1 positional argument but %d were given", len(args)+1)
		}
		s, err := softStr(v)
		return String(f(s)), err
	}
}

var wordBeginningSplit = regexp.MustCompile(`[-\s({\[<]+`)

// jinjaTitle is Jinja2's title filter (not str.title).
func jinjaTitle(s string) string {
	var b strings.Builder
	last := 0
	write := func(item string) {
		for i, r := range item {
			b.WriteString(pyUpper(string(r)))
			b.WriteString(pyLower(item[i+len(string(r)):]))
			return
		}
	}
	for _, loc := range wordBeginningSplit.FindAllStringIndex(s, -1) {
		write(s[last:loc[0]])
		b.WriteString(s[loc[0]:loc[1]])
		last = loc[1]
	}
	write(s[last:])
	return b.String()
}

func filterAbs(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	switch v.k {
	case kInt, kBool, kBig:
		if v.k == kBig || v.n < 0 {
			if v.k == kBig && v.bigInt().Sign() >= 0 {
				return v, nil
			}
			return negate(v)
		}
		return Int(v.n), nil
	case kFloat:
		return Float(math.Abs(v.float())), nil
	case kUndefined:
		return Value{}, undefinedError(v)
	}
	return Value{}, errf(KindType, "bad operand type for abs(): '%s'", v.typeName())
}

func filterAttr(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	if err := needArgs("attr", args, kw, 1, 1); err != nil {
		return Value{}, err
	}
	name, err := needStr("attr", args[0])
	if err != nil {
		return Value{}, err
	}
	if v.k == kUndefined {
		return Value{}, undefinedError(v)
	}
	if isDunder(name) {
		return unsafeUndefined(v, name), nil
	}
	if m, ok := methodValue(v, name); ok {
		return m, nil
	}
	switch v.k {
	case kNamespace:
		if r, ok := v.mapv().getStr(name); ok {
			return r, nil
		}
	case kLoop:
		if r, ok := loopAttr(v.o.(*loopObj), name); ok {
			return r, nil
		}
	}
	return undefined("'" + v.typeName() + " object' has no attribute '" + name + "'"), nil
}

func filterBatch(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("batch", args, kw, "linecount", "fill_with")
	if err != nil {
		return Value{}, err
	}
	if !a[0].isInt() {
		return Value{}, errf(KindType, "'%s' object cannot be interpreted as an integer", a[0].typeName())
	}
	n := clampInt(a[0].n)
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	var out []Value
	var cur []Value
	for _, it := range items {
		if len(cur) == n {
			out = append(out, List(cur...))
			cur = nil
		}
		cur = append(cur, it)
	}
	if len(cur) > 0 {
		if a[1].k != kUndefined {
			for len(cur) < n {
				cur = append(cur, a[1])
			}
		}
		out = append(out, List(cur...))
	}
	return List(out...), nil
}

func filterCenter(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("center", args, kw, "width")
	if err != nil {
		return Value{}, err
	}
	if a[0].k == kUndefined {
		a[0] = Int(80)
	}
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	return padStr("center", s, a[:1], nil, 'c')
}

func filterDefault(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("default", args, kw, "default_value", "boolean")
	if err != nil {
		return Value{}, err
	}
	if a[0].k == kUndefined && a[0].s == "" && len(args) == 0 {
		a[0] = String("")
	}
	if v.k == kUndefined || (a[1].truth() && !v.truth()) {
		return a[0], nil
	}
	return v, nil
}

func filterDictsort(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("dictsort", args, kw, "case_sensitive", "by", "reverse")
	if err != nil {
		return Value{}, err
	}
	if v.k != kMap {
		if v.k == kUndefined {
			return Value{}, undefinedError(v)
		}
		return Value{}, errf(KindAttribute, "'%s' object has no attribute 'items'", v.typeName())
	}
	pos := 0
	if a[1].k == kString {
		switch a[1].s {
		case "key":
		case "value":
			pos = 1
		default:
			return Value{}, errf(KindRuntime, "You can only sort by either \"key\" or \"value\"")
		}
	}
	items := append([]Value(nil), dictItems(v.mapv()).list()...)
	cs := a[0].truth()
	err = sortValues(items, func(it Value) Value {
		k := it.list()[pos]
		if !cs && k.k == kString {
			return String(pyLower(k.s))
		}
		return k
	}, a[2].truth())
	return List(items...), err
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", "\"", "&#34;").Replace(s)
}

func filterEscape(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	if v.k == kUndefined {
		return String(""), nil
	}
	return String(htmlEscape(v.str())), nil
}

func filterFirst(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	if len(items) == 0 {
		return undefined("No first item, sequence was empty."), nil
	}
	return items[0], nil
}

func filterLast(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	switch v.k {
	case kList, kTuple, kMap, kString:
	case kUndefined:
		return Value{}, undefinedError(v)
	default:
		return Value{}, errf(KindType, "'%s' object is not reversible", v.typeName())
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	if len(items) == 0 {
		return undefined("No last item, sequence was empty."), nil
	}
	return items[len(items)-1], nil
}

// pyFloatParse is Python's float(str).
func pyFloatParse(s string) (float64, bool) {
	t := strings.TrimFunc(s, isPySpace)
	low := strings.ToLower(strings.TrimLeft(t, "+-"))
	switch low {
	case "inf", "infinity":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	if t == "" || strings.Contains(t, "__") || strings.HasPrefix(low, "_") || strings.HasSuffix(t, "_") ||
		strings.ContainsAny(low, "xpboi") {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func toPyFloat(v Value) (float64, bool) {
	switch v.k {
	case kInt, kBool, kBig, kFloat:
		return toFloat(v), true
	case kString:
		return pyFloatParse(v.s)
	}
	return 0, false
}

func filterFloat(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("float", args, kw, "default")
	if err != nil {
		return Value{}, err
	}
	if f, ok := toPyFloat(v); ok {
		return Float(f), nil
	}
	if a[0].k == kUndefined {
		return Float(0), nil
	}
	return a[0], nil
}

// pyIntParse is Python's int(str, base) for base 10 and prefixes.
func pyIntParse(s string, base int) (Value, bool) {
	t := strings.TrimFunc(s, isPySpace)
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if base == 0 || base == 16 || base == 8 || base == 2 {
		if len(t) > 2 && t[0] == '0' {
			pb := map[byte]int{'x': 16, 'o': 8, 'b': 2}[t[1]|0x20]
			if pb != 0 && (base == 0 || base == pb) {
				base = pb
				t = t[2:]
				if strings.HasPrefix(t, "_") {
					t = t[1:]
				}
			}
		}
		if base == 0 {
			base = 10
		}
	}
	if t == "" || strings.HasPrefix(t, "_") || strings.HasSuffix(t, "_") || strings.Contains(t, "__") {
		return Value{}, false
	}
	t = strings.ReplaceAll(t, "_", "")
	b, ok := new(big.Int).SetString(t, base)
	if !ok {
		return Value{}, false
	}
	if neg {
		b.Neg(b)
	}
	return bigValue(b), true
}

func filterInt(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("int", args, kw, "default", "base")
	if err != nil {
		return Value{}, err
	}
	def := a[0]
	if def.k == kUndefined {
		def = Int(0)
	}
	base := 10
	if a[1].k != kUndefined {
		if !a[1].isInt() {
			return def, nil
		}
		base = clampInt(a[1].n)
	}
	switch v.k {
	case kInt, kBig:
		return v, nil
	case kBool:
		return Int(v.n), nil
	case kFloat:
		return floatToInt(v.float())
	case kString:
		if r, ok := pyIntParse(v.s, base); ok {
			return r, nil
		}
		if f, ok := pyFloatParse(v.s); ok {
			return floatToInt(f)
		}
	}
	return def, nil
}

func floatToInt(f float64) (Value, error) {
	if math.IsInf(f, 0) {
		return Value{}, errf(KindOverflow, "cannot convert float infinity to integer")
	}
	if math.IsNaN(f) {
		return Value{}, errf(KindValue, "cannot convert float NaN to integer")
	}
	f = math.Trunc(f)
	if math.Abs(f) < 1<<62 {
		return Int(int64(f)), nil
	}
	b, _ := new(big.Float).SetFloat64(f).Int(nil)
	return bigValue(b), nil
}

func filterFormat(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	if len(args) > 0 && len(kw) > 0 {
		return Value{}, errf(KindRuntime, "can't handle positional and keyword arguments at the same time")
	}
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	var arg Value
	if len(kw) > 0 {
		m := NewMap()
		for _, k := range kw {
			m.Set(k.name, k.v)
		}
		arg = MapValue(m)
	} else {
		arg = tuple(args...)
	}
	r, err := pyFormat(s, arg)
	return String(r), err
}

func filterIndent(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("indent", args, kw, "width", "first", "blank")
	if err != nil {
		return Value{}, err
	}
	ind := "    "
	switch w := a[0]; w.k {
	case kString:
		ind = w.s
	case kInt, kBool:
		if w.n > maxRepeat {
			return Value{}, errf(KindOverflow, "indent too large")
		}
		ind = strings.Repeat(" ", max(0, clampInt(w.n)))
	case kUndefined:
	default:
		return Value{}, errf(KindType, "can't multiply sequence by non-int of type '%s'", w.typeName())
	}
	// do_indent does `s += "\n"` then s.splitlines() without str().
	switch v.k {
	case kString:
	case kUndefined:
		return Value{}, undefinedError(v)
	case kList:
		return Value{}, errf(KindAttribute, "'list' object has no attribute 'splitlines'")
	case kTuple:
		return Value{}, errf(KindType, "can only concatenate tuple (not \"str\") to tuple")
	default:
		return Value{}, errf(KindType, "unsupported operand type(s) for +=: '%s' and 'str'", v.typeName())
	}
	s := v.s + "\n"
	lines := splitLines(s, false)
	var b strings.Builder
	if a[2].truth() {
		for i, l := range lines {
			if i > 0 {
				b.WriteString("\n" + ind)
			}
			b.WriteString(l.s)
		}
	} else {
		b.WriteString(lines[0].s)
		for _, l := range lines[1:] {
			b.WriteString("\n")
			if l.s != "" {
				b.WriteString(ind)
			}
			b.WriteString(l.s)
		}
	}
	rv := b.String()
	if a[1].truth() {
		rv = ind + rv
	}
	return String(rv), nil
}

func filterItems(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	switch v.k {
	case kUndefined:
		return List(), nil
	case kMap:
		return List(dictItems(v.mapv()).list()...), nil
	}
	return Value{}, errf(KindType, "Can only get item pairs from a mapping.")
}

// attrGetter is Jinja2's make_attrgetter: a dotted path of attributes or
// integer indexes, resolved with getitem.
func attrGetter(attr Value, def *Value, lower bool) (func(Value) (Value, error), error) {
	var parts []Value
	switch attr.k {
	case kString:
		for _, p := range strings.Split(attr.s, ".") {
			if i, err := strconv.Atoi(p); err == nil && p != "" && strings.Trim(p, "0123456789") == "" {
				parts = append(parts, Int(int64(i)))
			} else {
				parts = append(parts, String(p))
			}
		}
	case kUndefined, kNone:
	default:
		parts = []Value{attr}
	}
	return func(v Value) (Value, error) {
		for _, p := range parts {
			var err error
			if v, err = getItem(v, p); err != nil {
				return Value{}, err
			}
		}
		if def != nil && v.k == kUndefined {
			v = *def
		}
		if lower && v.k == kString {
			v = String(pyLower(v.s))
		}
		return v, nil
	}, nil
}

func filterJoin(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("join", args, kw, "d", "attribute")
	if err != nil {
		return Value{}, err
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	if a[1].k != kUndefined && a[1].k != kNone {
		get, _ := attrGetter(a[1], nil, false)
		mapped := make([]Value, len(items))
		for i, it := range items {
			if mapped[i], err = get(it); err != nil {
				return Value{}, err
			}
		}
		items = mapped
	}
	sep := ""
	if a[0].k != kUndefined {
		sep = a[0].str()
	}
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteString(sep)
		}
		s, err := softStr(it)
		if err != nil {
			return Value{}, err
		}
		b.WriteString(s)
	}
	return String(b.String()), nil
}

func filterLength(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	switch v.k {
	case kString:
		return Int(int64(runeLen(v.s))), nil
	case kList, kTuple:
		return Int(int64(len(v.list()))), nil
	case kMap, kNamespace:
		if v.k == kMap {
			return Int(int64(v.mapv().Len())), nil
		}
	case kUndefined:
		return Int(0), nil
	case kLoop:
		return Int(int64(v.o.(*loopObj).length)), nil
	}
	return Value{}, errf(KindType, "object of type '%s' has no len()", v.typeName())
}

func filterList(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	return List(append([]Value(nil), items...)...), nil
}

func kwGet(kw []kwArg, name string) (Value, bool) {
	for _, k := range kw {
		if k.name == name {
			return k.v, true
		}
	}
	return Value{}, false
}

func filterMap(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	if !v.truth() {
		return List(), nil
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	var fn func(Value) (Value, error)
	if attr, ok := kwGet(kw, "attribute"); ok && len(args) == 0 {
		var def *Value
		if d, ok := kwGet(kw, "default"); ok {
			def = &d
		}
		for _, k := range kw {
			if k.name != "attribute" && k.name != "default" {
				return Value{}, errf(KindRuntime, "Unexpected keyword argument '%s'", k.name)
			}
		}
		get, _ := attrGetter(attr, def, false)
		fn = get
	} else {
		if len(args) == 0 {
			return Value{}, errf(KindRuntime, "map requires a filter argument")
		}
		if args[0].k != kString {
			return Value{}, errf(KindRuntime, "No filter named %s.", args[0].repr())
		}
		flt := lookupFilter(args[0].s)
		if flt == nil {
			return Value{}, errf(KindRuntime, "No filter named '%s'.", args[0].s)
		}
		rest := args[1:]
		fn = func(x Value) (Value, error) { return flt(ev, x, rest, kw) }
	}
	out := make([]Value, len(items))
	for i, it := range items {
		if err := ev.burn(); err != nil {
			return Value{}, err
		}
		if out[i], err = fn(it); err != nil {
			return Value{}, err
		}
	}
	return List(out...), nil
}

func filterMinMax(ev *evaluator, v Value, args []Value, kw []kwArg, sign int) (Value, error) {
	a, err := argSpec("min/max", args, kw, "case_sensitive", "attribute")
	if err != nil {
		return Value{}, err
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	if len(items) == 0 {
		return undefined("No aggregated item, sequence was empty."), nil
	}
	get, _ := attrGetter(a[1], nil, !a[0].truth())
	best := items[0]
	bk, err := get(best)
	if err != nil {
		return Value{}, err
	}
	for _, it := range items[1:] {
		k, err := get(it)
		if err != nil {
			return Value{}, err
		}
		c, err := compareValues(k, bk, map[int]string{1: ">", -1: "<"}[sign])
		if err != nil {
			return Value{}, err
		}
		if c == sign {
			best, bk = it, k
		}
	}
	return best, nil
}

func filterSelect(ev *evaluator, v Value, args []Value, kw []kwArg, want, byAttr bool) (Value, error) {
	// Jinja2's select family is a generator guarded by `if value:`, so a
	// falsy input yields nothing without checking the arguments.
	if !v.truth() {
		return List(), nil
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	get := func(x Value) (Value, error) { return x, nil }
	if byAttr {
		if len(args) == 0 {
			return Value{}, errf(KindType, "Missing parameter for attribute name")
		}
		get, _ = attrGetter(args[0], nil, false)
		args = args[1:]
	}
	var test testFunc
	var targs []Value
	if len(args) > 0 {
		if args[0].k != kString {
			return Value{}, errf(KindRuntime, "No test named %s.", args[0].repr())
		}
		if test = lookupTest(args[0].s); test == nil {
			return Value{}, errf(KindRuntime, "No test named '%s'.", args[0].s)
		}
		targs = args[1:]
	}
	var out []Value
	for _, it := range items {
		if err := ev.burn(); err != nil {
			return Value{}, err
		}
		x, err := get(it)
		if err != nil {
			return Value{}, err
		}
		var ok bool
		if test != nil {
			if ok, err = test(ev, x, targs, kw); err != nil {
				return Value{}, err
			}
		} else {
			ok = x.truth()
		}
		if ok == want {
			out = append(out, it)
		}
	}
	return List(out...), nil
}

func filterReplace(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("replace", args, kw, "old", "new", "count")
	if err != nil {
		return Value{}, err
	}
	if a[0].k == kUndefined || a[1].k == kUndefined && len(args)+len(kw) < 2 {
		return Value{}, errf(KindType, "do_replace() missing required argument")
	}
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	n := -1
	if a[2].k != kUndefined && a[2].k != kNone {
		if !a[2].isInt() {
			return Value{}, errf(KindType, "'%s' object cannot be interpreted as an integer", a[2].typeName())
		}
		n = clampInt(a[2].n)
	}
	return String(pyReplace(s, a[0].str(), a[1].str(), n)), nil
}

func filterReverse(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	if v.k == kString {
		rs := []rune(v.s)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		return String(string(rs)), nil
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	out := make([]Value, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return List(out...), nil
}

func filterRound(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("round", args, kw, "precision", "method")
	if err != nil {
		return Value{}, err
	}
	prec := 0
	if a[0].k != kUndefined {
		if !a[0].isInt() {
			return Value{}, errf(KindType, "'%s' object cannot be interpreted as an integer", a[0].typeName())
		}
		prec = clampInt(a[0].n)
	}
	method := "common"
	if a[1].k == kString {
		method = a[1].s
	}
	if !v.isNumber() {
		if v.k == kUndefined {
			return Value{}, undefinedError(v)
		}
		return Value{}, errf(KindType, "type %s doesn't define __round__ method", v.typeName())
	}
	switch method {
	case "common":
		if v.isInt() {
			if v.k == kBool {
				v = Int(v.n)
			}
			if prec >= 0 {
				return v, nil
			}
			return roundIntHalfEven(v.bigInt(), -prec), nil
		}
		return Float(pyRound(v.float(), prec)), nil
	case "floor", "ceil":
		p := math.Pow(10, float64(prec))
		x := toFloat(v) * p
		if method == "floor" {
			x = math.Floor(x)
		} else {
			x = math.Ceil(x)
		}
		return Float(x / p), nil
	}
	return Value{}, errf(KindRuntime, "method must be common, ceil or floor")
}

// roundIntHalfEven is Python's round(int, -digits).
func roundIntHalfEven(b *big.Int, digits int) Value {
	if digits > 4000 {
		return Int(0)
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits)), nil)
	q, r := new(big.Int).DivMod(b, p, new(big.Int))
	twice := new(big.Int).Lsh(r, 1)
	if c := twice.Cmp(p); c > 0 || (c == 0 && q.Bit(0) == 1) {
		q.Add(q, big.NewInt(1))
	}
	return bigValue(q.Mul(q, p))
}

// pyRound is Python's round(float, ndigits): exact round-half-even on the
// decimal expansion of the binary value.
func pyRound(f float64, nd int) float64 {
	if math.IsInf(f, 0) || math.IsNaN(f) || f == 0 {
		return f
	}
	if nd > 320 {
		return f
	}
	if nd < -320 {
		return math.Copysign(0, f)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	// Exact decimal expansion of f.
	bf := new(big.Float).SetPrec(2000).SetFloat64(f)
	s = bf.Text('f', 1100)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	point := len(intPart) + nd // number of digits kept
	if point < 0 {
		return math.Copysign(0, f)
	}
	if point >= len(digits) {
		return f
	}
	kept := new(big.Int)
	if point > 0 {
		kept.SetString(digits[:point], 10)
	}
	rest := strings.TrimRight(digits[point:], "0")
	roundUp := false
	if rest != "" {
		switch {
		case rest[0] > '5':
			roundUp = true
		case rest[0] == '5':
			roundUp = len(rest) > 1 || kept.Bit(0) == 1
		}
	}
	if roundUp {
		kept.Add(kept, big.NewInt(1))
	}
	str := kept.String()
	var out string
	if nd >= 0 {
		out = str + "e-" + strconv.Itoa(nd)
	} else {
		out = str + "e" + strconv.Itoa(-nd)
	}
	r, _ := strconv.ParseFloat(out, 64)
	if neg {
		r = -r
	}
	return r
}

func filterSort(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("sort", args, kw, "reverse", "case_sensitive", "attribute")
	if err != nil {
		return Value{}, err
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	items = append([]Value(nil), items...)
	get, _ := attrGetter(a[2], nil, !a[1].truth())
	var kerr error
	err = sortValues(items, func(x Value) Value {
		k, e := get(x)
		if e != nil && kerr == nil {
			kerr = e
		}
		return k
	}, a[0].truth())
	if kerr != nil {
		return Value{}, kerr
	}
	return List(items...), err
}

func filterString(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	s, err := softStr(v)
	return String(s), err
}

var tagRE = regexp.MustCompile(`(?s)<!--.*?-->|<[^>]*>`)

func filterStriptags(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	s = tagRE.ReplaceAllString(s, "")
	s = strings.Join(strings.FieldsFunc(s, isPySpace), " ")
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&#39;", "'", "&#34;", "\"", "&quot;", "\"").Replace(s)
	return String(s), nil
}

func filterSum(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("sum", args, kw, "attribute", "start")
	if err != nil {
		return Value{}, err
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	total := Int(0)
	if a[1].k != kUndefined {
		total = a[1]
	}
	get, _ := attrGetter(a[0], nil, false)
	for _, it := range items {
		x, err := get(it)
		if err != nil {
			return Value{}, err
		}
		if total, err = binaryOp("+", total, x); err != nil {
			return Value{}, err
		}
	}
	return total, nil
}

// filterToJSON is transformers' override: json.dumps(x,
// ensure_ascii=False, indent=None, separators=None, sort_keys=False).
func filterToJSON(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("tojson", args, kw, "ensure_ascii", "indent", "separators", "sort_keys")
	if err != nil {
		return Value{}, err
	}
	o := &jsonOptions{itemSep: ", ", keySep: ": ", ensureASCI: a[0].k != kUndefined && a[0].truth(), sortKeys: a[3].truth()}
	switch ind := a[1]; ind.k {
	case kUndefined, kNone:
	case kString:
		o.indent, o.hasIndent = ind.s, true
	case kInt, kBool:
		if ind.n > maxRepeat {
			return Value{}, errf(KindOverflow, "indent too large")
		}
		o.indent, o.hasIndent = strings.Repeat(" ", max(0, clampInt(ind.n))), true
	default:
		return Value{}, errf(KindType, "can't multiply sequence by non-int of type '%s'", ind.typeName())
	}
	if o.hasIndent {
		o.itemSep = ","
	}
	switch sep := a[2]; sep.k {
	case kUndefined, kNone:
	case kList, kTuple:
		items := sep.list()
		if len(items) != 2 {
			return Value{}, errf(KindValue, "too many values to unpack (expected 2)")
		}
		if items[0].k != kString || items[1].k != kString {
			return Value{}, errf(KindType, "separators must be strings")
		}
		o.itemSep, o.keySep = items[0].s, items[1].s
	default:
		return Value{}, errf(KindType, "separators must be a pair of strings")
	}
	s, err := dumpJSON(v, o)
	return String(s), err
}

func filterTrim(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("trim", args, kw, "chars")
	if err != nil {
		return Value{}, err
	}
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	chars, has := "", false
	if a[0].k != kUndefined && a[0].k != kNone {
		if chars, err = needStr("strip", a[0]); err != nil {
			return Value{}, err
		}
		has = true
	}
	return String(pyStrip(s, chars, has, true, true)), nil
}

func filterUnique(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("unique", args, kw, "case_sensitive", "attribute")
	if err != nil {
		return Value{}, err
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	get, _ := attrGetter(a[1], nil, !a[0].truth())
	seen := NewMap()
	var out []Value
	for _, it := range items {
		k, err := get(it)
		if err != nil {
			return Value{}, err
		}
		if _, ok := hashKey(k); !ok {
			return Value{}, errf(KindType, "unhashable type: '%s'", k.typeName())
		}
		if _, ok := seen.get(k); ok {
			continue
		}
		seen.set(k, None())
		out = append(out, it)
	}
	return List(out...), nil
}

var wordRE = regexp.MustCompile(`[\p{L}\p{N}_\p{Mn}]+`)

func filterWordcount(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	return Int(int64(len(wordRE.FindAllStringIndex(s, -1)))), nil
}
