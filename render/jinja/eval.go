package jinja

import (
	"math"
	"math/big"
	"strings"
	"time"
)

// maxCallDepth bounds macro recursion (CPython raises RecursionError).
const maxCallDepth = 300

// frame is one variable scope. Loop iterations, macro calls and with
// blocks get their own frame; if blocks do not. The root frame holds the
// caller's variables and is never written.
type frame struct {
	names  []string
	vals   []Value
	parent *frame
	user   map[string]Value
}

func (f *frame) lookup(name string) (Value, bool) {
	for ; f != nil; f = f.parent {
		if f.user != nil {
			if v, ok := f.user[name]; ok {
				return v, true
			}
			continue
		}
		for i := len(f.names) - 1; i >= 0; i-- {
			if f.names[i] == name {
				return f.vals[i], true
			}
		}
	}
	return Value{}, false
}

func (f *frame) set(name string, v Value) {
	for i, n := range f.names {
		if n == name {
			f.vals[i] = v
			return
		}
	}
	f.names = append(f.names, name)
	f.vals = append(f.vals, v)
}

type control uint8

const (
	ctlNone control = iota
	ctlBreak
	ctlContinue
)

type evaluator struct {
	t     *Template
	out   *strings.Builder
	fuel  int
	depth int
	now   func() time.Time
	// folding is set while evaluating an output expression made only of
	// literals (see isConstant).
	folding bool
}

func (ev *evaluator) burn() error {
	ev.fuel--
	if ev.fuel < 0 {
		return errf(KindFuel, "evaluation exceeded the fuel limit")
	}
	return nil
}

// atLine fills in the line of an error that has none yet.
func atLine(err error, sp span) error {
	if e, ok := err.(*Error); ok && e.Line == 0 {
		e.Line = sp.line
	}
	return err
}

// capture renders body into a string with the current output swapped.
func (ev *evaluator) capture(body []node, f *frame) (string, control, error) {
	saved := ev.out
	var b strings.Builder
	ev.out = &b
	ctl, err := ev.execBody(body, f)
	ev.out = saved
	return b.String(), ctl, err
}

func (ev *evaluator) execBody(body []node, f *frame) (control, error) {
	for _, n := range body {
		ctl, err := ev.exec(n, f)
		if err != nil {
			return ctlNone, atLine(err, n.nodeSpan())
		}
		if ctl != ctlNone {
			return ctl, nil
		}
	}
	return ctlNone, nil
}

func (ev *evaluator) exec(n node, f *frame) (control, error) {
	if err := ev.burn(); err != nil {
		return ctlNone, err
	}
	switch n := n.(type) {
	case *textNode:
		ev.out.WriteString(n.text)
		ev.fuel -= len(n.text) >> 4
	case *outputNode:
		ev.folding = n.constant
		v, err := ev.eval(n.x, f)
		ev.folding = false
		if err != nil {
			return ctlNone, err
		}
		before := ev.out.Len()
		if v.k == kString {
			ev.out.WriteString(v.s)
		} else {
			v.writeRepr(ev.out, false)
		}
		ev.fuel -= (ev.out.Len() - before) >> 4
	case *ifNode:
		for i, test := range n.tests {
			v, err := ev.eval(test, f)
			if err != nil {
				return ctlNone, err
			}
			if v.truth() {
				return ev.execBody(n.bodies[i], f)
			}
		}
		return ev.execBody(n.els, f)
	case *forNode:
		return ev.execFor(n, f)
	case *setNode:
		v, err := ev.eval(n.value, f)
		if err != nil {
			return ctlNone, err
		}
		return ctlNone, ev.assign(n.target, v, f)
	case *setBlockNode:
		s, _, err := ev.capture(n.body, f)
		if err != nil {
			return ctlNone, err
		}
		v := String(s)
		for _, flt := range n.filters {
			if v, err = ev.applyFilter(flt, v, f); err != nil {
				return ctlNone, err
			}
		}
		return ctlNone, ev.assign(n.target, v, f)
	case *macroNode:
		f.set(n.name, ev.macroValue(n.m, f))
	case *callBlockNode:
		caller := ev.macroValue(n.caller, f)
		v, err := ev.evalCall(n.call, f, &caller)
		if err != nil {
			return ctlNone, err
		}
		ev.out.WriteString(v.str())
	case *filterBlockNode:
		s, _, err := ev.capture(n.body, f)
		if err != nil {
			return ctlNone, err
		}
		v := String(s)
		for _, flt := range n.filters {
			if v, err = ev.applyFilter(flt, v, f); err != nil {
				return ctlNone, err
			}
		}
		ev.out.WriteString(v.str())
	case *withNode:
		inner := &frame{parent: f}
		for i, t := range n.targets {
			v, err := ev.eval(n.values[i], f)
			if err != nil {
				return ctlNone, err
			}
			if err := ev.assign(t, v, inner); err != nil {
				return ctlNone, err
			}
		}
		return ev.execBody(n.body, inner)
	case *loopControlNode:
		if n.brk {
			return ctlBreak, nil
		}
		return ctlContinue, nil
	case *generationNode:
		return ev.execBody(n.body, f)
	case *errorNode:
		return ctlNone, errf(n.kind, "%s", n.msg)
	}
	return ctlNone, nil
}

// assign binds v to a name, unpacks it into a tuple of names, or sets a
// namespace attribute.
func (ev *evaluator) assign(target expr, v Value, f *frame) error {
	switch t := target.(type) {
	case *nameExpr:
		f.set(t.name, v)
		return nil
	case *nsRefExpr:
		ns, _ := f.lookup(t.name)
		if ns.k != kNamespace {
			return errf(KindRuntime, "cannot assign attribute on non-namespace object")
		}
		ns.mapv().set(String(t.attr), v)
		return nil
	case *tupleExpr:
		items, err := ev.iterate(v)
		if err != nil {
			return err
		}
		if len(items) != len(t.items) {
			if len(items) > len(t.items) {
				return errf(KindValue, "too many values to unpack (expected %d)", len(t.items))
			}
			return errf(KindValue, "not enough values to unpack (expected %d, got %d)", len(t.items), len(items))
		}
		for i, it := range t.items {
			if err := ev.assign(it, items[i], f); err != nil {
				return err
			}
		}
		return nil
	}
	return errf(KindSyntax, "can't assign to '%s'", exprTypeName(target))
}

// iterate returns the items Python's iter(v) yields.
func (ev *evaluator) iterate(v Value) ([]Value, error) {
	switch v.k {
	case kList, kTuple:
		return v.list(), nil
	case kMap:
		return v.mapv().keys, nil
	case kString:
		return stringChars(v.s), nil
	case kUndefined:
		return nil, nil
	}
	return nil, errf(KindType, "'%s' object is not iterable", v.typeName())
}

func stringChars(s string) []Value {
	out := make([]Value, 0, len(s))
	for i, r := range s {
		n := len(string(r))
		if r == 0xfffd {
			n = 1
			for j := 1; j <= 3 && i+j <= len(s); j++ {
				if s[i:i+j] == string(r) {
					n = j
					break
				}
			}
		}
		out = append(out, String(s[i:i+n]))
	}
	return out
}

// loopObj is Jinja2's LoopContext for the iteration in progress.
type loopObj struct {
	items   []Value
	index0  int
	length  int
	depth0  int
	lastVal Value
	changed bool
	recurse func(it Value) (Value, error)
}

func (ev *evaluator) execFor(n *forNode, f *frame) (control, error) {
	iterV, err := ev.eval(n.iter, f)
	if err != nil {
		return ctlNone, err
	}
	s, err := ev.renderLoop(n, iterV, f, 0)
	if err != nil {
		return ctlNone, err
	}
	_ = s
	return ctlNone, nil
}

// renderLoop runs one (possibly recursive) for loop writing to ev.out.
func (ev *evaluator) renderLoop(n *forNode, iterV Value, f *frame, depth int) (Value, error) {
	items, err := ev.iterate(iterV)
	if err != nil {
		return Value{}, err
	}
	if n.cond != nil {
		var kept []Value
		for _, it := range items {
			if err := ev.burn(); err != nil {
				return Value{}, err
			}
			inner := &frame{parent: f}
			if err := ev.assign(n.target, it, inner); err != nil {
				return Value{}, err
			}
			ok, err := ev.eval(n.cond, inner)
			if err != nil {
				return Value{}, err
			}
			if ok.truth() {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		_, err := ev.execBody(n.els, f)
		return Value{}, err
	}
	lo := &loopObj{items: items, length: len(items), depth0: depth}
	if n.recursive {
		lo.recurse = func(it Value) (Value, error) {
			ev.depth++
			defer func() { ev.depth-- }()
			if ev.depth > maxCallDepth {
				return Value{}, errf(KindRecursion, "maximum recursion depth exceeded")
			}
			saved := ev.out
			var b strings.Builder
			ev.out = &b
			_, err := ev.renderLoop(n, it, f, depth+1)
			ev.out = saved
			return String(b.String()), err
		}
	}
	loopV := Value{k: kLoop, o: lo}
	inner := &frame{parent: f, names: make([]string, 0, 4), vals: make([]Value, 0, 4)}
	for i, it := range items {
		if err := ev.burn(); err != nil {
			return Value{}, err
		}
		lo.index0 = i
		inner.names = inner.names[:0]
		inner.vals = inner.vals[:0]
		inner.set("loop", loopV)
		if err := ev.assign(n.target, it, inner); err != nil {
			return Value{}, err
		}
		ctl, err := ev.execBody(n.body, inner)
		if err != nil {
			return Value{}, err
		}
		if ctl == ctlBreak {
			break
		}
	}
	return Value{}, nil
}

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
		if v, ok := f.lookup(x.name); ok {
			return v, nil
		}
		if g, ok := lookupGlobal(x.name); ok {
			return g, nil
		}
		return undefined("'" + x.name + "' is undefined"), nil
	case *attrExpr:
		obj, err := ev.eval(x.x, f)
		if err != nil {
			return Value{}, err
		}
		return getAttr(obj, x.name)
	case *itemExpr:
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
			if _, ok := hashKey(k); !ok {
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
	var picked []int
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
	if step > 0 {
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
		for i := start; i < stop; i += step {
			picked = append(picked, i)
		}
	} else {
		for i := start; i > stop; i += step {
			picked = append(picked, i)
		}
	}
	switch obj.k {
	case kString:
		var b strings.Builder
		for _, i := range picked {
			if runes == nil {
				b.WriteByte(obj.s[i])
			} else {
				b.WriteRune(runes[i])
			}
		}
		return String(b.String()), nil
	}
	src := obj.list()
	out := make([]Value, len(picked))
	for j, i := range picked {
		out[j] = src[i]
	}
	if obj.k == kTuple {
		return tuple(out...), nil
	}
	return List(out...), nil
}

// getItem is Jinja2's Environment.getitem in the sandbox: obj[key],
// falling back to a safe attribute for string keys, else Undefined.
func getItem(obj, key Value) (Value, error) {
	switch obj.k {
	case kUndefined:
		return Value{}, undefinedError(obj)
	case kMap:
		if _, ok := hashKey(key); ok {
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
func getAttr(obj Value, name string) (Value, error) {
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
	}
	return undefined("'" + obj.typeName() + " object' has no attribute '" + name + "'"), nil
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
		return l.items[l.index0-1], true
	case "nextitem":
		if l.index0+1 >= l.length {
			return undefined("there is no next item"), true
		}
		return l.items[l.index0+1], true
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

func (ev *evaluator) evalArgs(c *callArgs, f *frame) ([]Value, []kwArg, error) {
	var args []Value
	if len(c.args) > 0 {
		args = make([]Value, 0, len(c.args))
	}
	for _, a := range c.args {
		v, err := ev.eval(a, f)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, v)
	}
	if c.dynArgs != nil {
		v, err := ev.eval(c.dynArgs, f)
		if err != nil {
			return nil, nil, err
		}
		items, err := ev.iterate(v)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, items...)
	}
	var kw []kwArg
	for i, name := range c.kwNames {
		v, err := ev.eval(c.kwVals[i], f)
		if err != nil {
			return nil, nil, err
		}
		kw = append(kw, kwArg{name, v})
	}
	if c.dynKw != nil {
		v, err := ev.eval(c.dynKw, f)
		if err != nil {
			return nil, nil, err
		}
		if v.k != kMap {
			return nil, nil, errf(KindType, "argument after ** must be a mapping, not %s", v.typeName())
		}
		m := v.mapv()
		for i, k := range m.keys {
			if k.k != kString {
				return nil, nil, errf(KindType, "keywords must be strings")
			}
			kw = append(kw, kwArg{k.s, m.vals[i]})
		}
	}
	return args, kw, nil
}

func (ev *evaluator) evalCall(c *callExpr, f *frame, caller *Value) (Value, error) {
	var fn Value
	if a, ok := c.fn.(*attrExpr); ok {
		obj, err := ev.eval(a.x, f)
		if err != nil {
			return Value{}, err
		}
		if caller == nil && obj.k != kUndefined && obj.k != kNamespace && !isDunder(a.name) {
			if m, ok := methodFunc(obj, a.name); ok {
				args, kw, err := ev.evalArgs(&c.callArgs, f)
				if err != nil {
					return Value{}, err
				}
				return m(ev, obj, args, kw)
			}
		}
		if fn, err = getAttr(obj, a.name); err != nil {
			return Value{}, err
		}
	} else {
		var err error
		if fn, err = ev.eval(c.fn, f); err != nil {
			return Value{}, err
		}
	}
	args, kw, err := ev.evalArgs(&c.callArgs, f)
	if err != nil {
		return Value{}, err
	}
	if caller != nil {
		kw = append(kw, kwArg{"caller", *caller})
	}
	return ev.callValue(fn, args, kw)
}

func (ev *evaluator) callValue(fn Value, args []Value, kw []kwArg) (Value, error) {
	switch fn.k {
	case kFunc:
		return fn.o.(*funcObj).call(ev, args, kw)
	case kUndefined:
		return Value{}, undefinedError(fn)
	case kLoop:
		l := fn.o.(*loopObj)
		if l.recurse == nil {
			return Value{}, errf(KindType, "Tried to call non recursive loop.  Maybe you forgot the 'recursive' modifier.")
		}
		if len(args) != 1 || len(kw) != 0 {
			return Value{}, errf(KindType, "loop() takes exactly one argument")
		}
		return l.recurse(args[0])
	}
	return Value{}, errf(KindType, "'%s' object is not callable", fn.typeName())
}

// macroValue closes m over the frame where it is defined.
func (ev *evaluator) macroValue(m *macroDef, def *frame) Value {
	return Value{k: kFunc, o: &funcObj{name: m.name, macro: true, call: func(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
		return ev.callMacro(m, def, args, kw)
	}}}
}

func (ev *evaluator) callMacro(m *macroDef, def *frame, args []Value, kw []kwArg) (Value, error) {
	ev.depth++
	defer func() { ev.depth-- }()
	if ev.depth > maxCallDepth {
		return Value{}, errf(KindRecursion, "maximum recursion depth exceeded")
	}
	inner := &frame{parent: def}
	np := len(m.params)
	if len(args) > np && !m.catchVarargs {
		return Value{}, errf(KindType, "macro '%s' takes not more than %d argument(s)", m.name, np)
	}
	firstDefault := np - len(m.defaults)
	used := make([]bool, len(kw))
	for i, p := range m.params {
		if i < len(args) {
			for j, k := range kw {
				if k.name == p {
					return Value{}, errf(KindType, "macro '%s' got multiple values for argument '%s'", m.name, p)
				}
				_ = j
			}
			inner.set(p, args[i])
			continue
		}
		found := false
		for j, k := range kw {
			if k.name == p && !used[j] {
				inner.set(p, k.v)
				used[j] = true
				found = true
				break
			}
		}
		if found {
			continue
		}
		if i >= firstDefault {
			v, err := ev.eval(m.defaults[i-firstDefault], inner)
			if err != nil {
				return Value{}, err
			}
			inner.set(p, v)
		} else {
			inner.set(p, undefined("parameter '"+p+"' was not provided"))
		}
	}
	if m.callerUsed {
		caller := undefined("No caller defined")
		for j, k := range kw {
			if k.name == "caller" && !used[j] {
				caller = k.v
				used[j] = true
			}
		}
		inner.set("caller", caller)
	}
	if m.catchVarargs {
		var extra []Value
		if len(args) > np {
			extra = args[np:]
		}
		inner.set("varargs", tuple(extra...))
	}
	rest := NewMap()
	for j, k := range kw {
		if !used[j] {
			rest.Set(k.name, k.v)
		}
	}
	if m.catchKwargs {
		inner.set("kwargs", MapValue(rest))
	} else if rest.Len() > 0 {
		k := rest.keys[0].s
		if k == "caller" {
			return Value{}, errf(KindType, "macro '%s' was invoked with two values for the special caller argument. This is most likely a bug.", m.name)
		}
		return Value{}, errf(KindType, "macro '%s' takes no keyword argument '%s'", m.name, k)
	}
	s, _, err := ev.capture(m.body, inner)
	if err != nil {
		return Value{}, err
	}
	return String(s), nil
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

func (ev *evaluator) applyFilter(flt *filterExpr, v Value, f *frame) (Value, error) {
	if flt.fn == nil {
		return Value{}, atLine(errf(KindRuntime, "No filter named '%s' found.", flt.name), flt.span)
	}
	args, kw, err := ev.evalArgs(&flt.call, f)
	if err != nil {
		return Value{}, err
	}
	r, err := flt.fn(ev, v, args, kw)
	if err != nil {
		return Value{}, atLine(err, flt.span)
	}
	return r, nil
}

func (ev *evaluator) applyTest(t *testExpr, f *frame) (Value, error) {
	v, err := ev.eval(t.x, f)
	if err != nil {
		return Value{}, err
	}
	if t.fn == nil {
		return Value{}, errf(KindRuntime, "No test named '%s' found.", t.name)
	}
	args, kw, err := ev.evalArgs(&t.call, f)
	if err != nil {
		return Value{}, err
	}
	ok, err := t.fn(ev, v, args, kw)
	if err != nil {
		return Value{}, err
	}
	return Bool(ok), nil
}
