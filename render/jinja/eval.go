package jinja

import (
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

// loopFrame is a loop's frame with room for the bindings of a usual iteration (loop and one
// or two targets) in one allocation: the frame, its names and its values.
type loopFrame struct {
	frame
	names [4]string
	vals  [4]Value
}

// newLoopFrame returns an empty frame under parent with room for four bindings.
func newLoopFrame(parent *frame) *frame {
	lf := &loopFrame{}
	lf.frame = frame{parent: parent, names: lf.names[:0], vals: lf.vals[:0]}
	return &lf.frame
}

func (f *frame) lookup(name string) (Value, bool) {
	v, w := f.lookupFrame(name)
	return v, w != nil
}

// lookupFrame returns the value bound to name and the frame binding it (nil: none).
func (f *frame) lookupFrame(name string) (Value, *frame) {
	for ; f != nil; f = f.parent {
		if f.user != nil {
			if v, ok := f.user[name]; ok {
				return v, f
			}
			continue
		}
		for i := len(f.names) - 1; i >= 0; i-- {
			if f.names[i] == name {
				return f.vals[i], f
			}
		}
	}
	return Value{}, nil
}

// resolveName is the value a name expression evaluates to in frame f: the innermost binding,
// else a global, else Undefined.
func resolveName(f *frame, name string) Value {
	if v, ok := f.lookup(name); ok {
		return v
	}
	if g, ok := lookupGlobal(name); ok {
		return g
	}
	return undefined("'" + name + "' is undefined")
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
	out   *output
	fuel  int
	depth int
	now   func() time.Time
	// folding is set while evaluating an output expression made only of
	// literals (see isConstant).
	folding bool
	// top is the template's top frame (macros defined there may be compared across executions).
	top *frame
	// memo is set by ExecuteMemo.
	memo *memoState
	// pure refuses calls other than built-in methods (guard.go).
	pure bool
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
	b := &output{}
	ev.out = b
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
		if err != nil && n.constant {
			// Folding failed at "compile time": Jinja2 then evaluates the
			// expression at run time, where slice errors propagate.
			v, err = ev.eval(n.x, f)
		}
		if err != nil {
			return ctlNone, err
		}
		before := ev.out.Len()
		if v.k == kString {
			ev.out.WriteString(v.s)
		} else {
			var b strings.Builder
			v.writeRepr(&b, false)
			ev.out.WriteString(b.String())
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
		ns, w := f.lookupFrame(t.name)
		if ev.memo != nil && ev.memo.cur != nil && ev.memo.outer(w) {
			ev.memo.recordWrite(t.name, ns, t.attr, v, f) // state carried to later iterations
		}
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
	rev     bool // the loop runs over items from the last (reversedItems)
	index0  int
	length  int
	depth0  int
	lastVal Value
	changed bool
	recurse func(it Value) (Value, error)
}

// item returns the loop's item at position i.
func (l *loopObj) item(i int) Value {
	if l.rev {
		return l.items[len(l.items)-1-i]
	}
	return l.items[i]
}

func (ev *evaluator) execFor(n *forNode, f *frame) (control, error) {
	if items, ok := ev.reversedItems(n, f); ok {
		_, err := ev.renderItems(n, items, true, f, 0)
		return ctlNone, err
	}
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

// reversedItems returns the items of the list or tuple a guarded loop (guard.go) iterates
// backwards (for message in messages[::-1], Qwen3's scan for the last user query), for
// renderItems to read from the end, instead of a reversed copy of them: the scan usually stops
// after a few messages, and the copy costs the conversation. It charges the fuel the slice's
// evaluation would have (eval, evalSlice), and ok is false whenever that evaluation would do
// anything else: another shape, another value, a recorded iteration (whose reads eval records),
// or too little fuel.
func (ev *evaluator) reversedItems(n *forNode, f *frame) (items []Value, ok bool) {
	if n.guard == nil || ev.memo != nil && ev.memo.cur != nil {
		return nil, false
	}
	ix, ok := n.iter.(*itemExpr)
	if !ok {
		return nil, false
	}
	name, isName := ix.x.(*nameExpr)
	sl, isSlice := ix.key.(*sliceExpr)
	if !isName || !isSlice || sl.start != nil || sl.stop != nil {
		return nil, false
	}
	burns := 2 // the subscript and the name
	switch step := sl.step.(type) {
	case *constExpr:
		if step.v.k != kInt || step.v.n != -1 {
			return nil, false
		}
		burns++
	case *unaryExpr:
		one, isConst := step.x.(*constExpr)
		if step.op != "-" || !isConst || one.v.k != kInt || one.v.n != 1 {
			return nil, false
		}
		burns += 2
	default:
		return nil, false
	}
	v := resolveName(f, name.name)
	if v.k != kList && v.k != kTuple || ev.fuel < burns {
		return nil, false
	}
	items = v.list()
	ev.fuel -= burns + 2*(len(items)>>2) // eval charges for the list it read and the one it made
	return items, true
}

// renderLoop runs one (possibly recursive) for loop writing to ev.out.
func (ev *evaluator) renderLoop(n *forNode, iterV Value, f *frame, depth int) (Value, error) {
	items, err := ev.iterate(iterV)
	if err != nil {
		return Value{}, err
	}
	return ev.renderItems(n, items, false, f, depth)
}

// renderItems runs loop n over items, from the last to the first when rev is set (only for
// reversedItems' loops: guarded, so without a condition, recursion or memo).
func (ev *evaluator) renderItems(n *forNode, items []Value, rev bool, f *frame, depth int) (Value, error) {
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
	// Jinja2 clears its "run else" flag at the end of each iteration's
	// body, so a loop whose every iteration ends in break or continue
	// still runs the else block.
	completed := false
	lo := &loopObj{items: items, rev: rev, length: len(items), depth0: depth}
	if n.recursive {
		lo.recurse = func(it Value) (Value, error) {
			ev.depth++
			defer func() { ev.depth-- }()
			if ev.depth > maxCallDepth {
				return Value{}, errf(KindRecursion, "maximum recursion depth exceeded")
			}
			saved := ev.out
			b := &output{}
			ev.out = b
			_, err := ev.renderLoop(n, it, f, depth+1)
			ev.out = saved
			return String(b.String()), err
		}
	}
	loopV := Value{k: kLoop, o: lo}
	inner := newLoopFrame(f)
	memoized := ev.memoizes(n, f, depth)
	first := 0
	// prevRecs are the previous execution's records; this one's are shared (a prefix of them,
	// taken unchanged) followed by recs.
	var prevRecs, shared recordList
	var recs []iterRecord
	var at, atItem *frame // where recorded paths and comparisons are evaluated again
	// rec is the record of the iteration being executed, reset by each: ev.memo.cur points to
	// it while the body runs, and recs takes a copy, so one serves the whole loop.
	var rec *iterRecord
	if memoized {
		rec = new(iterRecord)
		at = &frame{parent: f, names: []string{"loop"}, vals: []Value{loopV}}
		atItem = itemFrame(n, at)
		if ev.memo.prev != nil {
			prevRecs = ev.memo.prev.loops[n]
		}
		defer func() { ev.memo.keepRecords(n, shared, recs) }()
		if n.cond == nil && prevRecs.n > 0 {
			var same bool
			if first, same = ev.bulkReplay(n, items, &prevRecs, lo, at, atItem, &recs); same {
				shared = prevRecs.prefix(first)
			}
		}
		if recs == nil {
			recs = make([]iterRecord, 0, len(items)-first)
		}
		completed = first > 0
	}
	// guardHeld: the guard was true at the start of the previous iteration, which was skipped
	// (did nothing), so nothing it reads has changed and it is true again (guard.go).
	guardHeld := false
	for i := first; i < len(items); i++ {
		it := lo.item(i)
		if i > 0 && !memoized {
			truthy, ok := guardHeld, guardHeld
			if !guardHeld {
				truthy, ok = ev.guardState(n, f)
			}
			guardHeld = false
			if ok && !truthy {
				// Every iteration left would do nothing (guard.go), and would complete.
				completed = true
				break
			} else if ok && ev.guardSkip(n, it, inner, loopV, len(items)) {
				// This one would do nothing (guard.go), and would complete.
				completed = true
				guardHeld = true
				continue
			}
		}
		if err := ev.burn(); err != nil {
			return Value{}, err
		}
		lo.index0 = i
		var ctl control
		var ns *Map
		var replay bool
		var prevRec *iterRecord
		if memoized && i < prevRecs.n {
			prevRec = prevRecs.at(i)
			ns, replay = ev.replayable(prevRec, it, lo, f, bindItem(atItem, it))
		}
		if replay {
			r := *prevRec
			out := ev.memo.prev.out(&r)
			known := ev.memo.replayLCP(ev, &r)
			start := ev.out.Len()
			if known {
				ev.out.writeKnown(out)
			} else {
				ev.out.WriteString(out)
			}
			ev.fuel -= len(out) >> 4
			replayWrites(&r, ns)
			ev.memo.record(ev, &r, start)
			recs = append(recs, r)
			ctl = r.ctl
		} else {
			inner.names = inner.names[:0]
			inner.vals = inner.vals[:0]
			inner.set("loop", loopV)
			if err := ev.assign(n.target, it, inner); err != nil {
				return Value{}, err
			}
			start := 0
			if memoized {
				*rec = iterRecord{ok: true, item: it}
				ev.memo.cur, ev.memo.iter, ev.memo.loop = rec, inner, lo
				ev.memo.iterName, ev.memo.item = loopName(n), itemName(n)
				ev.memo.wns, ev.memo.wname, ev.memo.wattrs = nil, "", ev.memo.wattrs[:0]
				start = ev.out.Len()
			}
			var err error
			ctl, err = ev.execBody(n.body, inner)
			if memoized {
				ev.memo.cur, ev.memo.iter, ev.memo.loop, ev.memo.iterName, ev.memo.item = nil, nil, nil, "", ""
				ev.memo.wns, ev.memo.wname, ev.memo.wattrs = nil, "", ev.memo.wattrs[:0]
				// inner is reused by the next iteration: a record must not keep it.
				ev.memo.record(ev, rec, start)
				rec.ctl = ctl
				classify(rec, loopName(n))
				recs = append(recs, *rec)
			}
			if err != nil {
				return Value{}, err
			}
		}
		if ctl == ctlBreak {
			break
		}
		if ctl == ctlNone {
			completed = true
		}
	}
	if !completed && len(n.els) > 0 {
		_, err := ev.execBody(n.els, f)
		return Value{}, err
	}
	return Value{}, nil
}
