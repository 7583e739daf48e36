package jinja

import (
	"sync"
	"sync/atomic"
)

// A chat template often scans the conversation once to find something, with a namespace flag
// that stops the scan's work once it is found. Qwen3's scan for the last user query:
//
//	{%- for message in messages[::-1] %}
//	    {%- set index = (messages|length - 1) - loop.index0 %}
//	    {%- if ns.multi_step_tool and message.role == "user" and … %}
//	        {%- set ns.multi_step_tool = false %}
//	        {%- set ns.last_query_index = index %}
//	    {%- endif %}
//	{%- endfor %}
//
// Once ns.multi_step_tool is false, every later iteration sets a local nobody reads and writes
// nothing: the scan ends, in effect, at the last user query, but runs over the whole history. A
// loop with this shape (the guard) ends as soon as its guard is false at the start of an
// iteration, which makes the scan cost the messages after the last query, not the conversation.
// (Nor does a guarded loop over name[::-1] copy the list reversed first: reversedItems.)
//
// The shape, checked when the template is parsed (tailGuard), and why cutting is exact:
//   - the loop is not recursive, has no filter and binds one name;
//   - its body is empty text, then `set name = E` statements, then one `if G and …` (or `if G`)
//     with neither elif nor else;
//   - G reads only names bound outside the loop (no loop variable, no `loop`, no local of the
//     body) through attributes and subscripts with constant keys, and constants. Nothing in an
//     iteration whose if is not taken can change what G reads: the sets bind iteration locals,
//     and only the if's body (not run) could assign a namespace. So once G is false at the start
//     of an iteration it is false at the start of every later one, and `G and …` is false
//     without evaluating the rest;
//   - each E is made of constants, names bound outside the loop (reads as above), the locals set
//     before it, the loop's numeric and boolean attributes (index, index0, revindex, revindex0,
//     length, first, last, depth, depth0), unary - + not, binary + and -, and the length filter of
//     an outside name. Between iterations only the loop attributes change, and they keep their
//     kind (int or bool), so every E gives a value of the same kind each time, and + and - on the
//     same kinds either always fail or never do: an E that did not fail in an iteration already
//     run fails in none. The values are never observed (the if is not taken).
//
// The cut is taken at iteration t ≥ 1 when iteration t-1 ran to its end (not replayed) and G,
// evaluated then, is false, and only outside a memoized iteration (whose recording would
// otherwise miss the skipped iterations' reads). Only the fuel the skipped iterations would have
// burnt is not spent. After an iteration skipped by its item (guardSkip, below) G is not
// evaluated again: it was true at that iteration's start and the iteration did nothing. (Taking
// G as true is exact whatever it is: the if evaluates G itself, so it only delays the cut.)

// loopGuard is what tailGuard found in a for loop: G, evaluated at the start of an iteration,
// and, when the if's other conjuncts read nothing but the loop variable through pure operations
// (pureExpr), those conjuncts.
type loopGuard struct {
	g     expr
	conds []expr // nil: the conjuncts after G read more than the loop variable
}

// markGuards sets the guard of every for loop of body that has the shape above.
func markGuards(body []node) {
	walkStatements(body, func(n node) {
		if f, ok := n.(*forNode); ok {
			f.guard = tailGuard(f)
		}
	})
}

// tailGuard returns the guard of loop n, or nil when its body does not have the shape.
func tailGuard(n *forNode) *loopGuard {
	target, ok := n.target.(*nameExpr)
	if !ok || n.recursive || n.cond != nil || target.name == "loop" {
		return nil
	}
	// Names the body binds anywhere (sets at any depth, loop targets, macros …): a read of one
	// is not a read of an outside name.
	bound := map[string]bool{target.name: true, "loop": true}
	walkStatements(n.body, func(s node) {
		switch s := s.(type) {
		case *setNode:
			bindNames(s.target, bound)
		case *setBlockNode:
			bindNames(s.target, bound)
		case *forNode:
			bindNames(s.target, bound)
		case *macroNode:
			bound[s.name] = true
		case *withNode:
			for _, t := range s.targets {
				bindNames(t, bound)
			}
		}
	})
	locals := map[string]bool{}
	var cond *ifNode
	for i, s := range n.body {
		switch s := s.(type) {
		case *textNode:
			if s.text != "" {
				return nil
			}
		case *setNode:
			t, ok := s.target.(*nameExpr)
			if !ok || cond != nil || t.name == target.name || !stableExpr(s.value, bound, locals) {
				return nil
			}
			locals[t.name] = true
		case *ifNode:
			if i != len(n.body)-1 && !onlyEmptyText(n.body[i+1:]) {
				return nil
			}
			cond = s
		default:
			return nil
		}
		if cond != nil {
			break
		}
	}
	if cond == nil || len(cond.tests) != 1 || len(cond.els) != 0 {
		return nil
	}
	conj := conjuncts(cond.tests[0], nil)
	g := conj[0]
	if !fixedExpr(g, bound) {
		return nil
	}
	lg := &loopGuard{g: g}
	pure := len(conj) > 1
	for _, c := range conj[1:] {
		pure = pure && pureExpr(c, target.name)
	}
	if pure {
		lg.conds = conj[1:]
	}
	return lg
}

// conjuncts appends the operands of an and-chain to out, in evaluation order. With the first
// truthy, the chain is truthy exactly when every later one is, evaluated in this order until one
// is not (and-chains short-circuit whichever way they nest).
func conjuncts(x expr, out []expr) []expr {
	if b, ok := x.(*binaryExpr); ok && b.op == "and" && b.chain == nil {
		return conjuncts(b.r, conjuncts(b.l, out))
	}
	return append(out, x)
}

// pureMethods are the string methods a pure expression may call (evaluated with ev.pure, which
// refuses any call that is not a built-in method).
var pureMethods = map[string]bool{
	"startswith": true, "endswith": true, "strip": true, "lstrip": true, "rstrip": true,
	"lower": true, "upper": true, "split": true, "rsplit": true, "replace": true, "find": true,
	"rfind": true, "count": true,
}

// pureExpr reports whether x reads nothing but the loop variable target and constants, through
// attributes, subscripts, operators, tests and built-in string methods: its value (or error) is a
// function of the loop variable's value alone, and evaluating it changes nothing.
func pureExpr(x expr, target string) bool {
	switch n := x.(type) {
	case nil:
		return true
	case *constExpr:
		return true
	case *nameExpr:
		return n.name == target
	case *attrExpr:
		return pureExpr(n.x, target)
	case *itemExpr:
		if sl, ok := n.key.(*sliceExpr); ok {
			return pureExpr(n.x, target) && pureExpr(sl.start, target) && pureExpr(sl.stop, target) && pureExpr(sl.step, target)
		}
		return pureExpr(n.x, target) && pureExpr(n.key, target)
	case *unaryExpr:
		return pureExpr(n.x, target)
	case *binaryExpr:
		if n.chain != nil {
			for _, c := range n.chain {
				if !pureExpr(c, target) {
					return false
				}
			}
			return true
		}
		return pureExpr(n.l, target) && pureExpr(n.r, target)
	case *compareExpr:
		if !pureExpr(n.first, target) {
			return false
		}
		for _, r := range n.rest {
			if !pureExpr(r, target) {
				return false
			}
		}
		return true
	case *condExpr:
		return pureExpr(n.test, target) && pureExpr(n.yes, target) && pureExpr(n.no, target)
	case *concatExpr:
		return allPure(n.items, target)
	case *listExpr:
		return allPure(n.items, target)
	case *tupleExpr:
		return allPure(n.items, target)
	case *testExpr:
		return n.fn != nil && pureExpr(n.x, target) && pureArgs(&n.call, target)
	case *callExpr:
		a, ok := n.fn.(*attrExpr)
		return ok && pureMethods[a.name] && pureExpr(a.x, target) && pureArgs(&n.callArgs, target)
	}
	return false
}

func allPure(xs []expr, target string) bool {
	for _, x := range xs {
		if !pureExpr(x, target) {
			return false
		}
	}
	return true
}

func pureArgs(c *callArgs, target string) bool {
	if c.dynArgs != nil || c.dynKw != nil {
		return false
	}
	for _, a := range c.args {
		if !pureExpr(a, target) {
			return false
		}
	}
	for _, a := range c.kwVals {
		if !pureExpr(a, target) {
			return false
		}
	}
	return true
}

func onlyEmptyText(body []node) bool {
	for _, s := range body {
		if t, ok := s.(*textNode); !ok || t.text != "" {
			return false
		}
	}
	return true
}

// bindNames adds the names an assignment target binds.
func bindNames(target expr, bound map[string]bool) {
	switch t := target.(type) {
	case *nameExpr:
		bound[t.name] = true
	case *tupleExpr:
		for _, it := range t.items {
			bindNames(it, bound)
		}
	}
}

// fixedExpr reports whether x reads only names bound outside the loop (none of bound),
// through attributes and subscripts by constant keys, and constants: its value is the same at
// the start of every iteration whose predecessors assigned nothing outside themselves.
func fixedExpr(x expr, bound map[string]bool) bool {
	switch n := x.(type) {
	case *constExpr:
		return true
	case *nameExpr:
		return !bound[n.name] && n.name != "strftime_now"
	case *attrExpr:
		return fixedExpr(n.x, bound)
	case *itemExpr:
		_, slice := n.key.(*sliceExpr)
		_, constKey := n.key.(*constExpr)
		return !slice && constKey && fixedExpr(n.x, bound)
	case *unaryExpr:
		return n.op == "not" && fixedExpr(n.x, bound)
	}
	return false
}

// guardLoopAttrs are the loop attributes of fixed kind (int or bool) a stable expression may read.
var guardLoopAttrs = map[string]bool{
	"index": true, "index0": true, "revindex": true, "revindex0": true, "length": true,
	"first": true, "last": true, "depth": true, "depth0": true,
}

// stableExpr reports whether x is an expression whose success does not depend on the iteration
// (see the file comment): fixed reads, earlier locals, numeric loop attributes, + and -.
func stableExpr(x expr, bound, locals map[string]bool) bool {
	switch n := x.(type) {
	case *constExpr:
		return true
	case *nameExpr:
		return locals[n.name] || fixedExpr(n, bound)
	case *attrExpr:
		if root, ok := n.x.(*nameExpr); ok && root.name == "loop" {
			return guardLoopAttrs[n.name]
		}
		return fixedExpr(n, bound)
	case *itemExpr:
		return fixedExpr(n, bound)
	case *unaryExpr:
		return (n.op == "-" || n.op == "+" || n.op == "not") && stableExpr(n.x, bound, locals)
	case *binaryExpr:
		if n.op != "+" && n.op != "-" {
			return false
		}
		if n.chain != nil {
			for _, c := range n.chain {
				if !stableExpr(c, bound, locals) {
					return false
				}
			}
			return true
		}
		return stableExpr(n.l, bound, locals) && stableExpr(n.r, bound, locals)
	case *filterExpr:
		c := n.call
		return n.name == "length" && n.fn != nil && len(c.args) == 0 && len(c.kwNames) == 0 &&
			c.dynArgs == nil && c.dynKw == nil && n.x != nil && fixedExpr(n.x, bound)
	}
	return false
}

// guardState evaluates loop n's guard now, in the loop's frame f (the guard reads no name the
// iteration binds, so it means the same there): ok is false when there is none to use.
func (ev *evaluator) guardState(n *forNode, f *frame) (truthy, ok bool) {
	if n.guard == nil || (ev.memo != nil && ev.memo.cur != nil) {
		return false, false
	}
	v, err := ev.eval(n.guard.g, f)
	return v.truth(), err == nil
}

// Skipping iterations by their item. With G true, an iteration does nothing unless the if's
// other conjuncts hold for its item; when those read only the item (pure), whether they hold
// is a function of the item, which is immutable: ExecuteMemo keeps it per item value, in a
// cache shared by the executions of a conversation (the results never change), and an
// iteration whose item is known not to pass is skipped like one after the cut. Qwen3's scan
// then costs the messages added since the previous turn even when the last user query is far
// back. Items are told apart by identity (the message values the caller keeps from the previous
// render); values of other kinds are not cached.

// guardCache is the shared per-item result of a guarded loop's conjuncts.
type guardCache struct {
	m sync.Map // item identity (the map's or list's pointer) → bool
	n atomic.Int64
}

// guardCacheSlack bounds a cache: past twice the loop's items and this, a new one starts.
const guardCacheSlack = 256

func itemKey(v Value) (any, bool) {
	if v.k == kMap || v.k == kList {
		return v.o, true
	}
	return nil, false
}

// guardSkip reports whether the iteration over item it does nothing given a true guard: its
// conjuncts are known (or found now, with loop and the loop variable bound in inner, see
// bindTarget) not to hold. The iteration binds inner again if it runs.
func (ev *evaluator) guardSkip(n *forNode, it Value, inner *frame, loopV Value, items int) bool {
	ms := ev.memo
	if ms == nil || n.guard.conds == nil {
		return false
	}
	key, ok := itemKey(it)
	if !ok {
		return false
	}
	c := ms.next.guards[n]
	if c == nil {
		if ms.prev != nil {
			c = ms.prev.guards[n]
		}
		if c == nil || c.n.Load() > int64(guardCacheSlack+2*items) {
			c = &guardCache{}
		}
		if ms.next.guards == nil {
			ms.next.guards = map[*forNode]*guardCache{}
		}
		ms.next.guards[n] = c
	}
	if v, ok := c.m.Load(key); ok {
		if !v.(bool) {
			ms.next.skipped++
			return true
		}
		return false
	}
	holds, err := ev.pureConds(n.guard.conds, ev.bindTarget(n, it, inner, loopV))
	if err != nil {
		return false // run it: the error comes again, in place
	}
	if _, loaded := c.m.LoadOrStore(key, holds); !loaded {
		c.n.Add(1)
	}
	return !holds
}

// pureConds evaluates conjuncts in frame f with calls limited to built-in methods.
func (ev *evaluator) pureConds(conds []expr, f *frame) (bool, error) {
	ev.pure = true
	defer func() { ev.pure = false }()
	for _, c := range conds {
		v, err := ev.eval(c, f)
		if err != nil {
			return false, err
		}
		if !v.truth() {
			return false, nil
		}
	}
	return true, nil
}

// errNotPure is what a call other than a built-in method gives while ev.pure is set.
func errNotPure() error { return errf(KindRuntime, "not a built-in method") }

// bindTarget binds loop and the loop variable (a name: guarded loops have no other kind) in the
// iteration frame inner, as the iteration will, and returns it.
func (ev *evaluator) bindTarget(n *forNode, it Value, inner *frame, loopV Value) *frame {
	inner.names = inner.names[:0]
	inner.vals = inner.vals[:0]
	inner.set("loop", loopV)
	inner.set(n.target.(*nameExpr).name, it)
	return inner
}
