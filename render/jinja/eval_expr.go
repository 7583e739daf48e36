package jinja

import (
	"math"
	"math/big"
	"strings"
)

func (ev *evaluator) eval(x expr, f *frame) (Value, error) {
	if err := ev.burn(); err != nil {
		return Value{}, err
	}
	v, err := ev.eval1(x, f)
	if err != nil {
		return Value{}, atLine(err, x.exprSpan())
	}
	// Charge for the size of what was built so that fuel also bounds
	// memory (string doubling in a loop grows exponentially per step).
	switch v.k {
	case kString:
		ev.fuel -= len(v.s) >> 4
	case kList, kTuple:
		ev.fuel -= len(v.list()) >> 2
	}
	return v, nil
}

func (ev *evaluator) eval1(x expr, f *frame) (Value, error) {
	switch x := x.(type) {
	case *constExpr:
		return x.v, nil
	case *nameExpr:
		if ev.memo != nil && ev.memo.cur != nil {
			return ev.memoName(x.name, f), nil
		}
		return resolveName(f, x.name), nil
	case *attrExpr:
		if ev.memo != nil && ev.memo.cur != nil {
			if v, ok, err := ev.memoPath(x, f); ok {
				return v, err
			}
		}
		obj, err := ev.eval(x.x, f)
		if err != nil {
			return Value{}, err
		}
		return getAttrMissing(obj, x.name, x.dictMissing)
	case *itemExpr:
		if ev.memo != nil && ev.memo.cur != nil {
			if v, ok, err := ev.memoPath(x, f); ok {
				return v, err
			}
		}
		obj, err := ev.eval(x.x, f)
		if err != nil {
			return Value{}, err
		}
		if sl, ok := x.key.(*sliceExpr); ok {
			v, err := ev.evalSlice(obj, sl, f)
			if err != nil && ev.folding {
				// Jinja2 folds a {{ }} expression made only of literals at
				// compile time, through environment.getitem, which turns
				// this error into Undefined.
				return undefined("constant slice failed"), nil
			}
			return v, err
		}
		key, err := ev.eval(x.key, f)
		if err != nil {
			return Value{}, err
		}
		return getItem(obj, key)
	case *listExpr:
		items := make([]Value, len(x.items))
		for i, it := range x.items {
			v, err := ev.eval(it, f)
			if err != nil {
				return Value{}, err
			}
			items[i] = v
		}
		return List(items...), nil
	case *tupleExpr:
		items := make([]Value, len(x.items))
		for i, it := range x.items {
			v, err := ev.eval(it, f)
			if err != nil {
				return Value{}, err
			}
			items[i] = v
		}
		return tuple(items...), nil
	case *dictExpr:
		m := NewMap()
		for i := range x.keys {
			k, err := ev.eval(x.keys[i], f)
			if err != nil {
				return Value{}, err
			}
			if !hashable(k) {
				return Value{}, errf(KindType, "unhashable type: '%s'", k.typeName())
			}
			v, err := ev.eval(x.values[i], f)
			if err != nil {
				return Value{}, err
			}
			m.set(k, v)
		}
		return MapValue(m), nil
	case *callExpr:
		return ev.evalCall(x, f, nil)
	case *filterExpr:
		if ev.memo != nil && ev.memo.cur == nil {
			if v, ok := ev.memoFilter(x, f); ok {
				return v, nil
			}
		}
		v, err := ev.eval(x.x, f)
		if err != nil {
			return Value{}, err
		}
		return ev.applyFilter(x, v, f)
	case *testExpr:
		return ev.applyTest(x, f)
	case *unaryExpr:
		v, err := ev.eval(x.x, f)
		if err != nil {
			return Value{}, err
		}
		switch x.op {
		case "not":
			return Bool(!v.truth()), nil
		case "-":
			return negate(v)
		}
		if !v.isNumber() {
			if v.k == kUndefined {
				return Value{}, undefinedError(v)
			}
			return Value{}, errf(KindType, "bad operand type for unary +: '%s'", v.typeName())
		}
		if v.k == kBool {
			return Int(v.n), nil
		}
		return v, nil
	case *binaryExpr:
		if x.chain != nil {
			return ev.evalPlusChain(x, f)
		}
		l, err := ev.eval(x.l, f)
		if err != nil {
			return Value{}, err
		}
		switch x.op {
		case "and":
			if !l.truth() {
				return l, nil
			}
			return ev.eval(x.r, f)
		case "or":
			if l.truth() {
				return l, nil
			}
			return ev.eval(x.r, f)
		}
		r, err := ev.eval(x.r, f)
		if err != nil {
			return Value{}, err
		}
		if x.op == "**" && isNegConst(x.l) && !isConstant(x.r) && l.isNumber() {
			// Jinja2 emits a folded negative constant without parentheses,
			// so `-2 ** y` runs as Python's -(2 ** y).
			pos, _ := negate(l)
			v, err := binaryOp("**", pos, r)
			if err != nil {
				return Value{}, err
			}
			return negate(v)
		}
		return binaryOp(x.op, l, r)
	case *compareExpr:
		if ev.memo != nil && ev.memo.cur != nil {
			if v, ok, err := ev.memoCompare(x, f); ok {
				return v, err
			}
		}
		l, err := ev.eval(x.first, f)
		if err != nil {
			return Value{}, err
		}
		for i, op := range x.ops {
			r, err := ev.eval(x.rest[i], f)
			if err != nil {
				return Value{}, err
			}
			ok, err := compareOp(op, l, r)
			if err != nil {
				return Value{}, err
			}
			if !ok {
				return Bool(false), nil
			}
			l = r
		}
		return Bool(true), nil
	case *concatExpr:
		var b strings.Builder
		for _, it := range x.items {
			v, err := ev.eval(it, f)
			if err != nil {
				return Value{}, err
			}
			b.WriteString(v.str())
		}
		return String(b.String()), nil
	case *condExpr:
		t, err := ev.eval(x.test, f)
		if err != nil {
			return Value{}, err
		}
		if t.truth() {
			return ev.eval(x.yes, f)
		}
		if x.no == nil {
			return undefined("the inline if-expression on line evaluated to false and no else section was defined."), nil
		}
		return ev.eval(x.no, f)
	case *nsRefExpr:
		return Value{}, errf(KindSyntax, "namespace reference outside assignment")
	case *sliceExpr:
		return Value{}, errf(KindType, "slice outside subscript")
	}
	return Value{}, errf(KindRuntime, "unknown expression")
}

// evalPlusChain evaluates a + b + c ... left to right like Python, but
// joins runs of plain strings once instead of copying at every step.
func (ev *evaluator) evalPlusChain(x *binaryExpr, f *frame) (Value, error) {
	ops := x.chain
	// A chain of plain strings (the usual '<|im_start|>' + message.role + '\n' + content) is
	// joined with one allocation: the operands are evaluated in order while they are plain
	// strings, and the first that is not goes on through the general fold below.
	var buf [8]Value
	plainN, size := 0, 0
	for plainN < len(ops) && plainN < len(buf) {
		v, err := ev.eval(ops[plainN], f)
		if err != nil {
			return Value{}, err
		}
		buf[plainN] = v
		plainN++
		if v.k != kString || v.isMarkup() {
			break
		}
		size += len(v.s)
	}
	last := buf[plainN-1]
	if plainN == len(ops) && last.k == kString && !last.isMarkup() {
		var sb strings.Builder
		sb.Grow(size)
		for _, v := range buf[:plainN] {
			sb.WriteString(v.s)
		}
		return String(sb.String()), nil
	}
	// buf[:plainN-1] are plain strings, last is the first operand that is not (or the last
	// one taken into buf): acc is the plain prefix joined, and the fold goes on from last.
	var sb strings.Builder
	var acc Value
	rest := ops[plainN:]
	if plainN == 1 {
		acc = last
	} else {
		sb.Grow(size)
		for _, v := range buf[:plainN-1] {
			sb.WriteString(v.s)
		}
		acc = String(sb.String())
		sb = strings.Builder{}
		rest = ops[plainN-1:]
	}
	building := false
	for j, o := range rest {
		var r Value
		if plainN > 1 && j == 0 {
			r = last // evaluated above
		} else {
			var err error
			if r, err = ev.eval(o, f); err != nil {
				return Value{}, err
			}
		}
		plain := r.k == kString && !r.isMarkup()
		if plain && (building || (acc.k == kString && !acc.isMarkup())) {
			if !building {
				sb.WriteString(acc.s)
				building = true
			}
			sb.WriteString(r.s)
			continue
		}
		if building {
			acc, building = String(sb.String()), false
			sb.Reset()
		}
		var err error
		if acc, err = binaryOp("+", acc, r); err != nil {
			return Value{}, atLine(err, x.span)
		}
	}
	if building {
		acc = String(sb.String())
	}
	return acc, nil
}

// isNegConst reports whether x is a literal number with a minus sign.
func isNegConst(x expr) bool {
	u, ok := x.(*unaryExpr)
	if !ok || u.op != "-" {
		return false
	}
	c, ok := u.x.(*constExpr)
	return ok && c.v.isNumber() && c.v.truth()
}

// isConstant reports whether x is built only from literals, so that
// Jinja2's compiler would evaluate it at compile time in an output.
func isConstant(x expr) bool {
	ok := true
	var walk func(expr)
	walk = func(x expr) {
		switch x := x.(type) {
		case nil, *constExpr:
		case *listExpr:
			for _, it := range x.items {
				walk(it)
			}
		case *tupleExpr:
			for _, it := range x.items {
				walk(it)
			}
		case *itemExpr:
			walk(x.x)
			walk(x.key)
		case *sliceExpr:
			walk(x.start)
			walk(x.stop)
			walk(x.step)
		case *unaryExpr:
			walk(x.x)
		case *binaryExpr:
			walk(x.l)
			walk(x.r)
		case *concatExpr:
			for _, it := range x.items {
				walk(it)
			}
		case *dictExpr:
			for i := range x.keys {
				walk(x.keys[i])
				walk(x.values[i])
			}
		case *compareExpr:
			walk(x.first)
			for _, it := range x.rest {
				walk(it)
			}
		case *condExpr:
			if x.no == nil {
				ok = false // CondExpr.as_const needs an else branch
			}
			walk(x.test)
			walk(x.yes)
			walk(x.no)
		case *filterExpr:
			switch x.name {
			case "map", "select", "reject", "selectattr", "rejectattr":
				ok = false // context filters are never folded
			}
			walk(x.x)
			walkArgs(&x.call, walk)
		case *testExpr:
			walk(x.x)
			walkArgs(&x.call, walk)
		default:
			ok = false
		}
	}
	walk(x)
	return ok
}

func (ev *evaluator) evalSlice(obj Value, sl *sliceExpr, f *frame) (Value, error) {
	var parts [3]Value
	for i, e := range []expr{sl.start, sl.stop, sl.step} {
		if e == nil {
			parts[i] = None()
			continue
		}
		v, err := ev.eval(e, f)
		if err != nil {
			return Value{}, err
		}
		parts[i] = v
	}
	return sliceValue(obj, parts[0], parts[1], parts[2])
}

// sliceIndices is Python's slice.indices(n).
func sliceIndices(startV, stopV, stepV Value, n int) (start, stop, step int, err error) {
	idx := func(v Value) (int, bool, error) {
		switch v.k {
		case kNone:
			return 0, false, nil
		case kInt, kBool:
			return clampInt(v.n), true, nil
		case kBig:
			if v.bigInt().Sign() < 0 {
				return math.MinInt32, true, nil
			}
			return math.MaxInt32, true, nil
		}
		return 0, false, errf(KindType, "slice indices must be integers or None or have an __index__ method")
	}
	step = 1
	s, ok, err := idx(stepV)
	if err != nil {
		return
	}
	if ok {
		if s == 0 {
			err = errf(KindValue, "slice step cannot be zero")
			return
		}
		step = s
	}
	lo, hi := 0, n
	if step < 0 {
		lo, hi = -1, n-1
	}
	norm := func(v Value, def int) (int, error) {
		i, ok, err := idx(v)
		if err != nil || !ok {
			return def, err
		}
		if i < 0 {
			i += n
			if i < lo {
				i = lo
			}
		} else if i > hi {
			i = hi
		}
		return i, nil
	}
	if step > 0 {
		if start, err = norm(startV, lo); err != nil {
			return
		}
		stop, err = norm(stopV, hi)
	} else {
		if start, err = norm(startV, hi); err != nil {
			return
		}
		stop, err = norm(stopV, lo)
	}
	return
}

func clampInt(i int64) int {
	if i > math.MaxInt32 {
		return math.MaxInt32
	}
	if i < math.MinInt32 {
		return math.MinInt32
	}
	return int(i)
}

func sliceValue(obj, startV, stopV, stepV Value) (Value, error) {
	var n int
	var runes []rune
	switch obj.k {
	case kList, kTuple:
		n = len(obj.list())
	case kString:
		if isASCII(obj.s) {
			n = len(obj.s)
		} else {
			runes = []rune(obj.s)
			n = len(runes)
		}
	case kUndefined:
		return Value{}, undefinedError(obj)
	case kMap:
		// Jinja2 compiles slices to a plain Python subscript (not
		// environment.getitem), so errors propagate.
		return Value{}, errf(KindType, "unhashable type: 'slice'")
	default:
		return Value{}, errf(KindType, "'%s' object is not subscriptable", obj.typeName())
	}
	start, stop, step, err := sliceIndices(startV, stopV, stepV, n)
	if err != nil {
		return Value{}, err
	}
	if obj.k == kList && obj.o.(*listObj).rng != nil {
		// A slice of a range is a range.
		r := obj.o.(*listObj).rng
		var items []Value
		for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
			items = append(items, obj.list()[i])
		}
		nr := [3]int64{r[0] + int64(start)*r[2], r[0] + int64(stop)*r[2], r[2] * int64(step)}
		return Value{k: kList, o: &listObj{items: items, rng: &nr}}, nil
	}
	if step == 1 && start < stop {
		switch obj.k {
		case kString:
			if runes == nil {
				return String(obj.s[start:stop]), nil
			}
			return String(string(runes[start:stop])), nil
		case kList:
			if obj.isPlain() {
				return List(obj.list()[start:stop:stop]...), nil
			}
		}
	}
	if obj.k != kString {
		// Picked straight into a list of the slice's length (messages[::-1] copies a
		// conversation's messages on every render).
		src := obj.list()
		out := make([]Value, 0, sliceLen(start, stop, step))
		for i := start; step > 0 && i < stop || step < 0 && i > stop; i += step {
			out = append(out, src[i])
		}
		if obj.k == kTuple {
			return tuple(out...), nil
		}
		return List(out...), nil
	}
	var b strings.Builder
	for i := start; step > 0 && i < stop || step < 0 && i > stop; i += step {
		if runes == nil {
			b.WriteByte(obj.s[i])
		} else {
			b.WriteRune(runes[i])
		}
	}
	return String(b.String()), nil
}

// sliceLen is the number of indices start, start+step, … before stop (sliceIndices' bounds).
func sliceLen(start, stop, step int) int {
	switch {
	case step > 0 && start < stop:
		return (stop - start + step - 1) / step
	case step < 0 && start > stop:
		return (start - stop - step - 1) / -step
	}
	return 0
}

// getItem is Jinja2's Environment.getitem in the sandbox: obj[key],
// falling back to a safe attribute for string keys, else Undefined.
func getItem(obj, key Value) (Value, error) {
	switch obj.k {
	case kUndefined:
		return Value{}, undefinedError(obj)
	case kMap:
		if hashable(key) {
			if v, ok := obj.mapv().get(key); ok {
				return v, nil
			}
		}
	case kList, kTuple:
		if key.k == kInt || key.k == kBool {
			items := obj.list()
			i := key.n
			if i < 0 {
				i += int64(len(items))
			}
			if i >= 0 && i < int64(len(items)) {
				return items[i], nil
			}
			return undefined("'" + obj.typeName() + " object' has no element " + key.repr()), nil
		}
	case kString:
		if key.k == kInt || key.k == kBool {
			i := key.n
			if isASCII(obj.s) {
				if i < 0 {
					i += int64(len(obj.s))
				}
				if i >= 0 && i < int64(len(obj.s)) {
					return String(obj.s[i : i+1]), nil
				}
			} else {
				rs := []rune(obj.s)
				if i < 0 {
					i += int64(len(rs))
				}
				if i >= 0 && i < int64(len(rs)) {
					return String(string(rs[i])), nil
				}
			}
			return undefined("'str object' has no element " + key.repr()), nil
		}
	}
	if key.k == kString {
		return getAttrOnly(obj, key.s, true)
	}
	return undefined("'" + obj.typeName() + " object' has no element " + key.repr()), nil
}

// getAttr is Jinja2's sandboxed Environment.getattr: a Python attribute
// (method) first, then obj[name], else Undefined.
func getAttr(obj Value, name string) (Value, error) { return getAttrMissing(obj, name, "") }

// missingAttr is the reason of the undefined value an attribute name missing from an object of
// type typeName gives.
func missingAttr(typeName, name string) string {
	return "'" + typeName + " object' has no attribute '" + name + "'"
}

// getAttrMissing is getAttr with dictMissing, when not empty, the reason for a dict without name
// (missingAttr("dict", name), made beforehand).
func getAttrMissing(obj Value, name, dictMissing string) (Value, error) {
	if obj.k == kUndefined {
		return Value{}, undefinedError(obj)
	}
	if isDunder(name) {
		return unsafeUndefined(obj, name), nil
	}
	if m, ok := methodValue(obj, name); ok {
		return m, nil
	}
	switch obj.k {
	case kMap:
		if v, ok := obj.mapv().getStr(name); ok {
			return v, nil
		}
	case kNamespace:
		if v, ok := obj.mapv().getStr(name); ok {
			return v, nil
		}
	case kLoop:
		if v, ok := loopAttr(obj.o.(*loopObj), name); ok {
			return v, nil
		}
	case kTuple:
		if obj.o.(*listObj).view == "_GroupTuple" {
			switch name {
			case "grouper":
				return obj.list()[0], nil
			case "list":
				return obj.list()[1], nil
			}
		}
	}
	if obj.k == kMap && dictMissing != "" {
		return undefined(dictMissing), nil
	}
	return undefined(missingAttr(obj.typeName(), name)), nil
}

// getAttrOnly is the attribute half of getitem's fallback.
func getAttrOnly(obj Value, name string, fromItem bool) (Value, error) {
	if isDunder(name) {
		return unsafeUndefined(obj, name), nil
	}
	if m, ok := methodValue(obj, name); ok {
		return m, nil
	}
	switch obj.k {
	case kNamespace:
		if v, ok := obj.mapv().getStr(name); ok {
			return v, nil
		}
	case kLoop:
		if v, ok := loopAttr(obj.o.(*loopObj), name); ok {
			return v, nil
		}
	}
	return undefined("'" + obj.typeName() + " object' has no element " + pyReprString(name)), nil
}

func isDunder(name string) bool {
	return len(name) > 4 && strings.HasPrefix(name, "__") && strings.HasSuffix(name, "__")
}

func unsafeUndefined(obj Value, name string) Value {
	return Value{k: kUndefined, n: 1, s: "access to attribute '" + name + "' of '" + obj.typeName() + "' object is unsafe."}
}

func loopAttr(l *loopObj, name string) (Value, bool) {
	switch name {
	case "index":
		return Int(int64(l.index0 + 1)), true
	case "index0":
		return Int(int64(l.index0)), true
	case "revindex":
		return Int(int64(l.length - l.index0)), true
	case "revindex0":
		return Int(int64(l.length - l.index0 - 1)), true
	case "first":
		return Bool(l.index0 == 0), true
	case "last":
		return Bool(l.index0 == l.length-1), true
	case "length":
		return Int(int64(l.length)), true
	case "depth":
		return Int(int64(l.depth0 + 1)), true
	case "depth0":
		return Int(int64(l.depth0)), true
	case "previtem":
		if l.index0 == 0 {
			return undefined("there is no previous item"), true
		}
		return l.item(l.index0 - 1), true
	case "nextitem":
		if l.index0+1 >= l.length {
			return undefined("there is no next item"), true
		}
		return l.item(l.index0 + 1), true
	case "cycle":
		return Value{k: kFunc, o: &funcObj{name: "cycle", call: func(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
			if len(args) == 0 {
				return Value{}, errf(KindType, "no items for cycling given")
			}
			return args[l.index0%len(args)], nil
		}}}, true
	case "changed":
		return Value{k: kFunc, o: &funcObj{name: "changed", call: func(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
			v := tuple(args...)
			if l.changed && valuesEqual(v, l.lastVal) {
				return Bool(false), nil
			}
			l.changed, l.lastVal = true, v
			return Bool(true), nil
		}}}, true
	}
	return Value{}, false
}

func negate(v Value) (Value, error) {
	switch v.k {
	case kInt, kBool:
		if v.n == math.MinInt64 {
			return bigValue(new(big.Int).Neg(v.bigInt())), nil
		}
		return Int(-v.n), nil
	case kBig:
		return bigValue(new(big.Int).Neg(v.bigInt())), nil
	case kFloat:
		return Float(-v.float()), nil
	case kUndefined:
		return Value{}, undefinedError(v)
	}
	return Value{}, errf(KindType, "bad operand type for unary -: '%s'", v.typeName())
}
