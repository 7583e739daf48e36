package jinja

// Chat templates derive lists from the conversation with filters that keep or drop each message
// on its own. Mistral Nemo's, on every render:
//
//	{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}
//	{%- for message in loop_messages | rejectattr("role", "equalto", "tool") | rejectattr("role", "equalto", "tool_results") | selectattr("tool_calls", "undefined") %}
//	    {%- if (message["role"] == "user") != (loop.index0 % 2 == 0) %} … raise … {%- endif %}
//	{%- endfor %}
//
// A chain of such filters (per-item filters: select, reject, selectattr and rejectattr with
// constant arguments and no keywords, and list) applied to a name bound to a list gives the
// subsequence of the list's items that pass every filter, and whether an item passes is a
// function of the item alone: items are immutable, the arguments constants, the tests built in.
// Two items sameValue-equal are indistinguishable, so they pass alike. ExecuteMemo keeps, per
// chain, the items it filtered and which of them passed; the next execution compares its items
// with them, takes the verdicts of the longest equal prefix from the record and filters only the
// items after it (a conversation's list grows at its end), then builds the same list the chain
// would. When filtering those items fails, the chain is evaluated as usual, so the error comes
// again, in place. Only the fuel the reused verdicts would have burnt is not spent.
//
// The items of such a chain keep their positions as its input grows (the passing items of a
// prefix are a prefix of the result), so a top-level loop over one is memoized like a loop over
// a name (memo.go), with no read positional: its items are not those of the chain's root.

// filterRun is one evaluation of a chain of per-item filters: the items it filtered and whether
// each passed.
type filterRun struct {
	in   []Value
	keep []bool
	// known is how many verdicts came from the previous execution's record (tests).
	known int
}

// filteredLoop is the name memoization gives a loop over a filter chain (iterName, classify): no
// template can bind it, so no read goes through it.
const filteredLoop = "(filtered)"

// loopName is the name a memoized loop iterates, as classify and positionalRefs take it.
func loopName(n *forNode) string {
	if x, ok := n.iter.(*nameExpr); ok {
		return x.name
	}
	return filteredLoop
}

// memoizesFiltered reports whether the for loop n iterates a chain of per-item filters of a
// name, which memoizes then records as a loop over a name. Guarded loops (guard.go) are left to
// their guard; loops with a condition filter their items again.
func memoizesFiltered(n *forNode) bool {
	_, ok := filterChainRoot(n.iter)
	return ok && n.guard == nil && n.cond == nil
}

// perItemFilter reports whether x keeps or drops each item of a list on its own, with constant
// arguments.
func perItemFilter(x *filterExpr) bool {
	c := &x.call
	if x.fn == nil || len(c.kwNames) > 0 || c.dynArgs != nil || c.dynKw != nil {
		return false
	}
	switch x.name {
	case "list":
		if len(c.args) > 0 {
			return false
		}
	case "select", "reject", "selectattr", "rejectattr":
		for _, a := range c.args {
			if _, ok := a.(*constExpr); !ok {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// filterChainRoot returns the name x applies a chain of per-item filters to (loop_messages in
// `loop_messages | rejectattr(…) | selectattr(…)`); ok is false when x is not such a chain.
func filterChainRoot(x expr) (root *nameExpr, ok bool) {
	fx, isFilter := x.(*filterExpr)
	if !isFilter {
		return nil, false
	}
	for perItemFilter(fx) {
		switch in := fx.x.(type) {
		case *filterExpr:
			fx = in
		case *nameExpr:
			return in, true
		default:
			return nil, false
		}
	}
	return nil, false
}

// memoFilter evaluates the chain x (filterChainRoot gave root) in frame f, filtering only the
// items after those the previous execution filtered the same; ok is false when x is not such a
// chain over a list, or filtering the new items failed: the caller then evaluates x as usual.
// Only outside recorded iterations, whose reads it would not record.
func (ev *evaluator) memoFilter(x *filterExpr, f *frame) (v Value, ok bool) {
	ms := ev.memo
	root, isChain := filterChainRoot(x)
	if !isChain {
		return Value{}, false
	}
	in, err := ev.eval(root, f)
	if err != nil || in.k != kList && in.k != kTuple {
		return Value{}, false
	}
	items := in.list()
	var prev *filterRun
	if ms.prev != nil {
		prev = ms.prev.filters[x]
	}
	known := 0
	if prev != nil {
		for lim := min(len(items), len(prev.in)); known < lim && sameValue(prev.in[known], items[known]); known++ {
		}
	}
	keep := make([]bool, len(items))
	if known > 0 {
		copy(keep, prev.keep[:known])
	}
	if known < len(items) {
		tail := List(items[known:]...)
		out, err := ev.applyChain(x, tail, f)
		if err != nil || out.k != kList {
			return Value{}, false
		}
		// The chain's result is a subsequence of its input, of the very values: match it.
		passed := out.list()
		j := 0
		for i := known; i < len(items) && j < len(passed); i++ {
			if identical(items[i], passed[j]) {
				keep[i] = true
				j++
			}
		}
		if j != len(passed) {
			return Value{}, false
		}
	}
	var kept []Value
	for i, it := range items {
		if keep[i] {
			kept = append(kept, it)
		}
	}
	if ms.next.filters == nil {
		ms.next.filters = map[*filterExpr]*filterRun{}
	}
	ms.next.filters[x] = &filterRun{in: items, keep: keep, known: known}
	return List(kept...), true
}

// applyChain applies the filters of chain x (innermost first) to v, as evaluating x with its
// root bound to v would.
func (ev *evaluator) applyChain(x *filterExpr, v Value, f *frame) (Value, error) {
	if in, ok := x.x.(*filterExpr); ok {
		var err error
		if v, err = ev.applyChain(in, v, f); err != nil {
			return Value{}, err
		}
	}
	return ev.applyFilter(x, v, f)
}

// identical reports whether a and b are the very same value (same kind, contents and object).
func identical(a, b Value) bool { return a.k == b.k && a.n == b.n && a.s == b.s && a.o == b.o }
