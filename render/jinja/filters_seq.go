package jinja

import (
	"strconv"
	"strings"
)

func filterBatch(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("batch", args, kw, "linecount", "fill_with")
	if err != nil {
		return Value{}, err
	}
	if a[0].k == kUndefined && len(args)+len(kw) == 0 {
		return Value{}, errf(KindType, "do_batch() missing 1 required positional argument: 'linecount'")
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	// do_batch compares len(tmp) == linecount, so a non-int linecount
	// never splits.
	var out, cur []Value
	for _, it := range items {
		if valuesEqual(Int(int64(len(cur))), a[0]) {
			out = append(out, List(cur...))
			cur = nil
		}
		cur = append(cur, it)
	}
	if len(cur) > 0 {
		if a[1].k != kUndefined && a[1].k != kNone {
			for {
				c, err := compareValues(Int(int64(len(cur))), a[0], "<")
				if err != nil {
					return Value{}, err
				}
				if c != -1 || len(cur) > maxRepeatItems {
					break
				}
				cur = append(cur, a[1])
			}
		}
		out = append(out, List(cur...))
	}
	return List(out...), nil
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
		if e, ok := err.(*Error); ok && e.Kind == KindType {
			return Value{}, errf(KindFilterArgument, "argument must be iterable")
		}
		return Value{}, err
	}
	out := make([]Value, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return List(out...), nil
}

// filterGroupBy is Jinja2's groupby: sorted by the attribute, grouped into
// (grouper, list) named tuples.
func filterGroupBy(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("groupby", args, kw, "attribute", "default", "case_sensitive")
	if err != nil {
		return Value{}, err
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	var def *Value
	if a[1].k != kUndefined && a[1].k != kNone {
		def = &a[1]
	}
	key, _ := attrGetter(a[0], def, !a[2].truth())
	out, _ := attrGetter(a[0], def, false)
	sorted := append([]Value(nil), items...)
	var kerr error
	keyOf := func(x Value) Value {
		k, e := key(x)
		if e != nil && kerr == nil {
			kerr = e
		}
		return k
	}
	if err := sortValues(sorted, keyOf, false); err != nil {
		return Value{}, err
	}
	var groups []Value
	for i := 0; i < len(sorted); {
		k := keyOf(sorted[i])
		j := i + 1
		for j < len(sorted) && valuesEqual(keyOf(sorted[j]), k) {
			j++
		}
		g, err := out(sorted[i])
		if err != nil {
			return Value{}, err
		}
		groups = append(groups, Value{k: kTuple, o: &listObj{items: []Value{g, List(sorted[i:j:j]...)}, view: "_GroupTuple"}})
		i = j
	}
	if kerr != nil {
		return Value{}, kerr
	}
	return List(groups...), nil
}

// filterSlice is Jinja2's slice: n columns of nearly equal size.
func filterSlice(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("slice", args, kw, "slices", "fill_with")
	if err != nil {
		return Value{}, err
	}
	if !a[0].isInt() {
		return Value{}, errf(KindType, "unsupported operand type(s) for //: 'int' and '%s'", a[0].typeName())
	}
	n := clampInt(a[0].n)
	if n == 0 {
		return Value{}, errf(KindZeroDivision, "integer division or modulo by zero")
	}
	seq, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	if n < 0 || n > maxRepeatItems {
		return List(), nil
	}
	per, extra, offset := len(seq)/n, len(seq)%n, 0
	var out []Value
	for i := 0; i < n; i++ {
		start := offset + i*per
		if i < extra {
			offset++
		}
		end := offset + (i+1)*per
		tmp := append([]Value(nil), seq[start:end]...)
		if a[1].k != kUndefined && a[1].k != kNone && i >= extra {
			tmp = append(tmp, a[1])
		}
		out = append(out, List(tmp...))
	}
	return List(out...), nil
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
	// Jinja2's make_multi_attrgetter: "a,b" sorts by several attributes,
	// and keys are lists, so equal Undefined keys compare as equal.
	var getters []func(Value) (Value, error)
	if a[2].k == kString {
		for _, part := range strings.Split(a[2].s, ",") {
			g, _ := attrGetter(String(part), nil, !a[1].truth())
			getters = append(getters, g)
		}
	} else {
		g, _ := attrGetter(a[2], nil, !a[1].truth())
		getters = append(getters, g)
	}
	var kerr error
	err = sortValues(items, func(x Value) Value {
		keys := make([]Value, len(getters))
		for i, g := range getters {
			k, e := g(x)
			if e != nil && kerr == nil {
				kerr = e
			}
			keys[i] = k
		}
		return List(keys...)
	}, a[0].truth())
	if kerr != nil {
		return Value{}, kerr
	}
	return List(items...), err
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
		if !hashable(k) {
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
