package jinja

// Replaying a conversation's history iteration by iteration still reads every record and every
// value it recorded, which costs the history (in memory traffic: a cold cache pays for each).
// Most iterations of a chat template's message loop read nothing but their own message, their
// position (loop.index0, loop.first, loop.last) and their neighbours (messages[loop.index0 - 1]);
// the rest add a comparison with a namespace value (loop.index0 > ns.last_query_index). When the
// loop's first k items are the previous execution's, the records of such iterations hold without
// looking at what they read:
//   - their item is the same (compared for the k items up front, by pointer for the message
//     values the caller kept from the previous render);
//   - index, index0, first, depth and depth0 are the same at the same position, and last was
//     false and still is while the position is not the last one;
//   - a read of `name[c]…` through the name the loop iterates, with 0 ≤ c < k, reads the same
//     item as before (sameValue-equal, so indistinguishable), hence the same value: the recorded
//     value equals what that read gave on the previous execution's item c, by induction over
//     the executions the record was replayed in;
//   - recorded comparisons are evaluated again, as replayable does, at the record's position
//     (the state is the loop's initial state: replayed iterations assign nothing outside).
// Records are classified once, when made (classify); the check of a run of them reads only the
// records themselves, and their output, one contiguous span of the previous text, is written at
// once (without a copy when the output shares the previous one: output.go).

// Record classes (iterRecord.cls).
const (
	clsFull      uint8 = 1 << iota // needs replayable: other reads, not ok, or a loop control
	clsLastFalse                   // read loop.last, which was false
	clsExprs                       // has recorded comparisons
)

// classify sets r.cls and r.refMax for a record of a loop over name.
func classify(r *iterRecord, name string) {
	r.cls, r.refMax = 0, -1
	if !r.ok || r.ctl != ctlNone {
		r.cls = clsFull
		return
	}
	for _, lr := range r.loop {
		switch lr.attr {
		case "index", "index0", "first", "depth", "depth0":
		case "last":
			if lr.v.k != kBool || lr.v.n != 0 {
				r.cls |= clsFull
			}
			r.cls |= clsLastFalse
		default:
			r.cls |= clsFull
		}
	}
	for i := range r.outer {
		o := &r.outer[i]
		if o.name != name || len(o.steps) == 0 || o.steps[0].attr || o.steps[0].key.k != kInt || o.steps[0].key.n < 0 {
			r.cls |= clsFull
			continue
		}
		r.refMax = max(r.refMax, o.steps[0].key.n)
	}
	if len(r.exprs) > 0 {
		r.cls |= clsExprs
	}
}

// bulkReplay replays the longest run of prev's leading records that hold by the rules above,
// appends them to *recs and returns their number (0: none; the caller checks the rest one by
// one). n is a memoized loop without a filter over a name, items its items now, lo its loop
// object and at the frame binding loop above the loop's frame.
func (ev *evaluator) bulkReplay(n *forNode, items []Value, prev []iterRecord, lo *loopObj, at *frame, recs *[]iterRecord) int {
	k, lim := 0, min(len(items), len(prev))
	for k < lim && sameValue(prev[k].item, items[k]) {
		k++
	}
	j := 0
	var fixed fixedOperands
	for ; j < k; j++ {
		r := &prev[j]
		if r.cls&clsFull != 0 || r.refMax >= int64(k) || r.cls&clsLastFalse != 0 && j >= len(items)-1 {
			break
		}
		if r.cls&clsExprs != 0 {
			lo.index0 = j
			same := true
			for _, er := range r.exprs {
				v, err := fixed.compare(ev, er.x, lo, at)
				if err != nil || !sameValue(v, er.v) {
					same = false
					break
				}
			}
			if !same {
				break
			}
		}
	}
	if j == 0 {
		return 0
	}
	ms := ev.memo
	// The run's output: one span of the previous text when every record of it was written there,
	// one after the other.
	s0, end := prev[0].start, prev[0].start
	for i := range j {
		if prev[i].start != end {
			s0 = -1
			break
		}
		end += len(prev[i].out)
	}
	if s0 < 0 || end > len(ms.prev.text) || ev.out != ms.main {
		// Written elsewhere (a set block): record by record, as replay does.
		for i := range j {
			r := prev[i]
			start := ev.out.Len()
			ev.out.WriteString(r.out)
			r.out, r.start = ms.output(ev, n, len(*recs), start)
			*recs = append(*recs, r)
		}
	} else {
		span := ms.prev.text[s0:end]
		at0 := ev.out.Len()
		ms.syncLCP()
		if !ms.lcpDone && ms.lcp == at0 && s0 == at0 {
			// Everything so far equals the previous text and the span sits at the same offset:
			// equal by construction (replayLCP).
			ms.lcp += len(span)
			ev.out.writeKnown(span)
		} else {
			ev.out.WriteString(span)
		}
		for i := range j {
			r := prev[i]
			start := at0 + r.start - s0
			ms.spans = append(ms.spans, outSpan{loop: n, index: len(*recs), start: start, end: start + len(r.out)})
			r.out, r.start = "", start
			*recs = append(*recs, r)
		}
	}
	total := 0
	for i := range j {
		total += len(prev[i].out)
	}
	ev.fuel -= j + total>>4
	ms.next.bulk += j
	lo.index0 = j - 1
	return j
}

// fixedOperands evaluates a run's recorded comparisons as ev.eval(x, at) would, faster: names
// other than loop are resolved once per run (no replayed iteration rebinds or assigns anything
// outside itself, so they read the same values throughout), loop.<attr> is read from the loop
// object, and constants, attributes, subscripts, + and - are applied directly (what eval1 does
// for them). Anything else, or anything that fails, is left to ev.eval, which gives the same
// value or error.
type fixedOperands struct {
	names []*nameExpr // a run reads few distinct names: a short list beats a map
	vals  []Value
}

func (fo *fixedOperands) compare(ev *evaluator, x *compareExpr, lo *loopObj, at *frame) (Value, error) {
	l, ok := fo.eval(x.first, lo, at)
	if !ok {
		return ev.eval(x, at)
	}
	for i, op := range x.ops {
		r, ok := fo.eval(x.rest[i], lo, at)
		if !ok {
			return ev.eval(x, at)
		}
		holds, err := compareOp(op, l, r)
		if err != nil {
			return ev.eval(x, at)
		}
		if !holds {
			return Bool(false), nil
		}
		l = r
	}
	return Bool(true), nil
}

// eval evaluates o without ev.eval where it can; ok is false when it cannot (or o fails).
func (fo *fixedOperands) eval(o expr, lo *loopObj, at *frame) (Value, bool) {
	switch n := o.(type) {
	case *constExpr:
		return n.v, true
	case *nameExpr:
		if n.name == "loop" {
			return Value{}, false
		}
		for i, x := range fo.names {
			if x == n {
				return fo.vals[i], true
			}
		}
		v := resolveName(at, n.name)
		fo.names, fo.vals = append(fo.names, n), append(fo.vals, v)
		return v, true
	case *attrExpr:
		if root, ok := n.x.(*nameExpr); ok && root.name == "loop" {
			return loopAttr(lo, n.name)
		}
		v, ok := fo.eval(n.x, lo, at)
		if !ok {
			return Value{}, false
		}
		v, err := getAttr(v, n.name)
		return v, err == nil
	case *itemExpr:
		if _, slice := n.key.(*sliceExpr); slice {
			return Value{}, false
		}
		v, ok := fo.eval(n.x, lo, at)
		if !ok {
			return Value{}, false
		}
		key, ok := fo.eval(n.key, lo, at)
		if !ok {
			return Value{}, false
		}
		v, err := getItem(v, key)
		return v, err == nil
	case *binaryExpr:
		if n.chain != nil || (n.op != "+" && n.op != "-") {
			return Value{}, false
		}
		l, ok := fo.eval(n.l, lo, at)
		if !ok {
			return Value{}, false
		}
		r, ok := fo.eval(n.r, lo, at)
		if !ok {
			return Value{}, false
		}
		v, err := binaryOp(n.op, l, r)
		return v, err == nil
	}
	return Value{}, false
}
