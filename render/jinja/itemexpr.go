package jinja

// A recorded comparison may read the iteration's loop variable besides outer names and the loop
// object. Mistral Nemo's template places its tools block before the last user message with
//
//	{%- for message in loop_messages %}
//	    {%- if message["role"] == "user" %}
//	        {%- if tools is not none and (message == user_messages[-1]) %} … tools … {%- endif %}
//
// Recorded by its operands, the comparison read user_messages[-1], which changes with every new
// user message: every user message's iteration ran again, each comparing two messages, and the
// run of records replayed in bulk ended at the first one. Recorded by its result, it holds again
// for every user message but the last two. Replay checks the record's item first (sameValue:
// indistinguishable), so the comparison evaluated again with the loop variable bound to the
// current item gives what the iteration would compute now.
//
// The name must be bound, where the comparison reads it, in the iteration's own frame to the very
// item (not rebound by the body); a read of the same name that resolves elsewhere (a macro's
// outer variable) makes the comparison unreplayable, since replay binds the name to the item.
// Recorded paths are read again where they were (readPath, outerPaths), not where the loop
// variable is bound. A comparison that reads the loop variable is never positional: bulkReplay
// evaluates it again at each record, with the variable bound to that record's item, and
// fixedOperands never keeps an operand that reads it.

// itemName returns the name of loop n's variable, or "" when it is not a name (a tuple target)
// or is `loop`, whose binding replay already controls.
func itemName(n *forNode) string {
	if t, ok := n.target.(*nameExpr); ok && t.name != "loop" {
		return t.name
	}
	return ""
}

// itemFrame returns the frame where loop n's recorded comparisons are evaluated again: one
// binding its loop variable (bindItem sets it) above at, or at itself when itemName is "".
func itemFrame(n *forNode, at *frame) *frame {
	name := itemName(n)
	if name == "" {
		return at
	}
	return &frame{parent: at, names: []string{name}, vals: []Value{{}}}
}

// bindItem binds the loop variable of itemFrame's frame fr to it and returns fr.
func bindItem(fr *frame, it Value) *frame {
	if fr != nil && len(fr.names) == 1 && fr.names[0] != "loop" {
		fr.vals[0] = it
	}
	return fr
}

// readsItem reports whether a read of the loop variable's name, bound to v in frame w, reads the
// iteration's item: it is bound in the iteration's frame to the item itself.
func (ms *memoState) readsItem(v Value, w *frame) bool {
	return w == ms.iter && ms.cur != nil && identical(v, ms.cur.item)
}

// itemOnly reports whether comparison x (replayableExpr's shapes), in an iteration whose loop
// variable is item, reads the loop variable and no outer name: a function of the item and the
// position, recorded by what it reads (the loop object's attributes) as before, not by its
// result, which replay would evaluate again for nothing.
func itemOnly(x expr, item string) bool {
	readsItem, readsOuter := false, false
	eachName(x, func(name string) {
		switch name {
		case item:
			readsItem = true
		case "loop":
		default:
			readsOuter = true
		}
	})
	return readsItem && !readsOuter
}

// eachName calls visit with every name x reads, for replayableExpr's shapes.
func eachName(x expr, visit func(string)) {
	switch n := x.(type) {
	case *nameExpr:
		visit(n.name)
	case *attrExpr:
		eachName(n.x, visit)
	case *itemExpr:
		eachName(n.x, visit)
		eachName(n.key, visit)
	case *unaryExpr:
		eachName(n.x, visit)
	case *binaryExpr:
		if n.chain != nil {
			for _, c := range n.chain {
				eachName(c, visit)
			}
			return
		}
		eachName(n.l, visit)
		eachName(n.r, visit)
	case *compareExpr:
		eachName(n.first, visit)
		for _, r := range n.rest {
			eachName(r, visit)
		}
	}
}
