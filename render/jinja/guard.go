package jinja

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
// burnt is not spent.

// loopGuard is what tailGuard found in a for loop: G, evaluated at the start of an iteration.
type loopGuard struct {
	g expr
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
			if !ok || cond != nil || !stableExpr(s.value, bound, locals) {
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
	g := cond.tests[0]
	for {
		b, ok := g.(*binaryExpr)
		if !ok || b.op != "and" || b.chain != nil {
			break
		}
		g = b.l
	}
	if !fixedExpr(g, bound) {
		return nil
	}
	return &loopGuard{g: g}
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

// guardFalse reports whether loop n's guard is false now, in the loop's frame f (the guard
// reads no name the iteration binds, so it means the same there).
func (ev *evaluator) guardFalse(n *forNode, f *frame) bool {
	if n.guard == nil || (ev.memo != nil && ev.memo.cur != nil) {
		return false
	}
	v, err := ev.eval(n.guard.g, f)
	return err == nil && !v.truth()
}
