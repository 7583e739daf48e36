package jinja

import "slices"

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
//     with the loop variable bound to its item (the state is the loop's initial state: replayed
//     iterations assign nothing outside), except those fixed by the position (positionalRefs),
//     which hold as reads through name do, and those the previous execution's check found to
//     hold with the same values of what they read outside the loop (runCheck);
//   - reads of other outer names (a top-level variable, a macro, a kwarg) are compared with what
//     the same path gives now, as replayable does; the path is read once per run, since nothing
//     a replayed iteration does changes it.
// Records are classified once, when made (classify); the check of a run of them reads only the
// records themselves, and their output, one contiguous span of the previous text, is written at
// once (without a copy when the output shares the previous one: output.go). Records locate their
// output by offset (iterRecord.start), so a run written at its old offset is copied as it is.

// Record classes (iterRecord.cls).
const (
	clsFull      uint8 = 1 << iota // needs replayable: not ok, a loop control, namespace writes, …
	clsLastFalse                   // read loop.last, which was false
	clsExprs                       // has recorded comparisons
	clsOuter                       // reads outer names other than the loop's
)

// classify sets r.cls and r.refMax for a record of a loop over name.
func classify(r *iterRecord, name string) {
	r.cls, r.refMax = 0, -1
	if !r.ok || r.ctl != ctlNone || len(r.nsWrites()) > 0 {
		r.cls = clsFull
		return
	}
	for _, lr := range r.loopReads() {
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
	outer := r.outerReads()
	for i := range outer {
		o := &outer[i]
		if o.name != name {
			r.cls |= clsOuter
			continue
		}
		if len(o.steps) == 0 || o.steps[0].attr || o.steps[0].key.k != kInt || o.steps[0].key.n < 0 {
			r.cls |= clsFull
			continue
		}
		r.refMax = max(r.refMax, o.steps[0].key.n)
	}
	for _, er := range r.exprReads() {
		if !er.positional {
			r.cls |= clsExprs
			continue
		}
		r.refMax = max(r.refMax, er.refMax)
	}
}

// positionalRefs reports whether comparison operand x is fixed by the iteration's position: made
// of constants, loop.index, index0, first, depth and depth0, subscripts of name (the sequence the
// loop iterates) at non-negative positions computed from those (messages[loop.index0 - 1].role),
// and attribute, subscript, arithmetic, logical and comparison operations on them. At the same
// position, with the same items up to the largest subscript (which it folds into *refMax), such a
// comparison gives the result it gave when recorded, as bulkReplay's rules for reads through name
// have it. Subscripts are computed whether or not evaluation reaches them (a short-circuited
// operand counts too), which only makes the answer more cautious.
func positionalRefs(x expr, name string, lo *loopObj, refMax *int64) bool {
	switch n := x.(type) {
	case *constExpr:
		return true
	case *attrExpr:
		if root, ok := n.x.(*nameExpr); ok && root.name == "loop" {
			switch n.name {
			case "index", "index0", "first", "depth", "depth0":
				return true
			}
			return false
		}
		return positionalRefs(n.x, name, lo, refMax)
	case *itemExpr:
		if _, slice := n.key.(*sliceExpr); slice {
			return false
		}
		if root, ok := n.x.(*nameExpr); ok && root.name == name {
			c, ok := positionInt(n.key, lo)
			if !ok || c < 0 {
				return false
			}
			*refMax = max(*refMax, c)
			return true
		}
		if _, ok := n.key.(*constExpr); !ok {
			if _, ok := positionInt(n.key, lo); !ok {
				return false
			}
		}
		return positionalRefs(n.x, name, lo, refMax)
	case *unaryExpr:
		return positionalRefs(n.x, name, lo, refMax)
	case *binaryExpr:
		if n.chain != nil {
			for _, c := range n.chain {
				if !positionalRefs(c, name, lo, refMax) {
					return false
				}
			}
			return true
		}
		return positionalRefs(n.l, name, lo, refMax) && positionalRefs(n.r, name, lo, refMax)
	case *compareExpr:
		if !positionalRefs(n.first, name, lo, refMax) {
			return false
		}
		for _, r := range n.rest {
			if !positionalRefs(r, name, lo, refMax) {
				return false
			}
		}
		return true
	}
	return false
}

// maxPositionConst bounds the constants positionInt adds: an expression deep enough to overflow
// int64 with them would exceed the parser's nesting limit first.
const maxPositionConst = 1 << 32

// positionInt evaluates an integer made of integer constants, loop.index, loop.index0,
// loop.depth and loop.depth0 with + and - at the loop's current position.
func positionInt(x expr, lo *loopObj) (int64, bool) {
	switch n := x.(type) {
	case *constExpr:
		// Bounded, so that the sums below cannot overflow (Jinja's integers do not).
		return n.v.n, n.v.k == kInt && n.v.n > -maxPositionConst && n.v.n < maxPositionConst
	case *attrExpr:
		if root, ok := n.x.(*nameExpr); ok && root.name == "loop" {
			switch n.name {
			case "index", "index0", "depth", "depth0":
				v, _ := loopAttr(lo, n.name)
				return v.n, true
			}
		}
	case *binaryExpr:
		if n.chain != nil || (n.op != "+" && n.op != "-") {
			return 0, false
		}
		l, ok := positionInt(n.l, lo)
		if !ok {
			return 0, false
		}
		r, ok := positionInt(n.r, lo)
		if !ok {
			return 0, false
		}
		if n.op == "-" {
			return l - r, true
		}
		return l + r, true
	}
	return 0, false
}

// sameItem is sameValue for a record's item and the item now, which is usually the very same
// map (a message kept from the previous turn): compared by pointer without the call.
func sameItem(a, b Value) bool {
	return a.k == kMap && identical(a, b) || sameValue(a, b)
}

// bulkReplay replays the longest run of prev's leading records that hold by the rules above and
// returns their number j (0: none; the caller checks the rest one by one). When the run was
// written at its old offset (same), the records are prev's first j unchanged and the caller
// shares them (recordList.prefix); otherwise *recs is made and they are appended to it. n is a
// memoized loop without a filter over a name, items its items now, lo its loop object, at the
// frame binding loop above the loop's frame and atItem the frame binding the loop variable above
// at (itemFrame).
func (ev *evaluator) bulkReplay(n *forNode, items []Value, prev *recordList, lo *loopObj, at, atItem *frame, recs *[]iterRecord) (j int, same bool) {
	k, lim := 0, min(len(items), prev.n)
	fixed := fixedOperands{item: itemName(n)}
	var paths outerPaths
	// The run's output: one span of the previous text when every record of it was written there,
	// one after the other (s0 < 0 otherwise).
	s0, end := prev.segs[0][0].start, prev.segs[0][0].start
	total := 0
check:
	for _, seg := range prev.segs {
		for i := range seg {
			r := &seg[i]
			if k == lim || !sameItem(r.item, items[k]) {
				break check
			}
			k++
		}
	}
	// The previous execution's check of its run, whose comparisons hold again while their
	// operands outside the loop give the same values (runCheck); and this one's.
	prevCheck := &runCheck{}
	if c := ev.memo.prev.checks[n]; c != nil && c.refMax < int64(k) {
		prevCheck = c
	}
	check := runCheck{refMax: -1, covered: make([]uint64, (k+63)/64)}
	prevState := 0 // 0: prevCheck's operands not read yet; 1: they hold; -1: they do not
	prevHolds := func() bool {
		if prevState == 0 {
			prevState = -1
			if fixed.holdAll(prevCheck, lo, at) {
				prevState = 1
				check.ops, check.vals = append(check.ops, prevCheck.ops...), append(check.vals, prevCheck.vals...)
				check.refMax = max(check.refMax, prevCheck.refMax)
			}
		}
		return prevState == 1
	}
run:
	for _, seg := range prev.segs {
		for i := range seg {
			r := &seg[i]
			if j == k || r.cls&clsFull != 0 || r.refMax >= int64(k) || r.cls&clsLastFalse != 0 && j >= len(items)-1 {
				break run
			}
			if r.cls&clsOuter != 0 && !paths.hold(at, r.detail.outer, loopName(n)) {
				break run
			}
			if r.cls&clsExprs != 0 {
				lo.index0 = j
				if prevCheck.covers(j) && prevHolds() {
					ev.memo.next.checked++
					check.cover(j)
				} else {
					covered := true
					for _, er := range r.detail.exprs {
						if er.positional {
							continue
						}
						v, direct, err := fixed.compare(ev, er.x, lo, bindItem(atItem, items[j]))
						if err != nil || !sameValue(v, er.v) {
							break run
						}
						covered = covered && direct && fixed.summarize(er.x, loopName(n), lo, at, &check)
					}
					if covered {
						check.cover(j)
					}
				}
			}
			if r.start != end {
				s0 = -1
			}
			end = r.end
			total += r.outLen()
			j++
		}
	}
	if check.n = j; j > 0 {
		if ms := ev.memo; ms.next.checks == nil {
			ms.next.checks = map[*forNode]*runCheck{n: &check}
		} else {
			ms.next.checks[n] = &check
		}
	}
	if j == 0 {
		return 0, false
	}
	ms := ev.memo
	if s0 < 0 || end > len(ms.prev.text) || ev.out != ms.main {
		// Written elsewhere (a set block): record by record, as replay does.
		*recs = prev.appendTo(make([]iterRecord, 0, len(items)), j)
		for i := range *recs {
			r := &(*recs)[i]
			start := ev.out.Len()
			ev.out.WriteString(ms.prev.out(r))
			ms.record(ev, r, start)
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
		if same = at0 == s0; !same {
			*recs = prev.appendTo(make([]iterRecord, 0, len(items)), j)
			for i := range *recs {
				r := &(*recs)[i]
				r.start, r.end = at0+r.start-s0, at0+r.end-s0
			}
		}
	}
	ev.fuel -= j + total>>4
	ms.next.bulk += j
	lo.index0 = j - 1
	return j, same
}

// outerPaths are the outer reads (other than through the loop's name) a run's records made, each
// read once now: nothing a replayed iteration does can change them.
type outerPaths struct {
	paths []*outerRead // the first record's read of each distinct path
	vals  []Value
	oks   []bool
}

// hold reports whether every read in reads of a name other than loopName gives, now, the value it
// recorded (what replayable checks, with readPath from the same names).
func (op *outerPaths) hold(at *frame, reads []outerRead, loopName string) bool {
	for i := range reads {
		r := &reads[i]
		if r.name == loopName {
			continue
		}
		v, ok := op.read(at, r)
		if !ok || !sameValue(v, r.v) {
			return false
		}
	}
	return true
}

func (op *outerPaths) read(at *frame, r *outerRead) (Value, bool) {
	for i, p := range op.paths {
		if p.name == r.name && samePath(p.steps, r.steps) {
			return op.vals[i], op.oks[i]
		}
	}
	v, ok := readPath(at, r)
	op.paths, op.vals, op.oks = append(op.paths, r), append(op.vals, v), append(op.oks, ok)
	return v, ok
}

// samePath reports whether two recorded paths take the same steps (keys compared as sameValue
// does, so equal keys read equal values).
func samePath(a, b []pathStep) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].attr != b[i].attr || a[i].name != b[i].name || !a[i].attr && !sameValue(a[i].key, b[i].key) {
			return false
		}
	}
	return true
}

// A run's recorded comparisons hold, one record after the other, as the previous execution's
// check of the same records found, when they give the same results: a comparison of values a
// template cannot tell apart (sameValue) gives the same result. runCheck keeps what the check of
// a run's first n records read, for the next execution's check to evaluate those comparisons
// again only when it has to. A comparison is covered when fixedOperands evaluated it without
// ev.eval and each of its operands is either
//   - fixed by the record's position and item (positionPure: constants, loop.index, index0,
//     first, depth, depth0, the loop variable, and attributes, subscripts, + and - of them),
//     which are the same at the same position over the same items (the run's items are
//     sameValue to the records'), or
//   - outside the loop (loopFree: constants and names other than loop and the loop variable,
//     with attributes, subscripts, + and -), whose value at the start of the loop runCheck
//     keeps: the next check compares it with the value now, once per run.
// The next check takes the results for a covered record (of the first n) when every kept value is
// the same now; the records are the same ones (a run's records are its previous run's, taken in
// order), so each comparison gives the result it gave, which was the recorded one.

// runCheck is what a bulk check found of its run's n records' comparisons (see above).
type runCheck struct {
	n       int
	covered []uint64 // bit j: record j's comparisons are all covered
	ops     []expr   // the operands outside the loop that the covered comparisons read
	vals    []Value  // their values at the start of the loop
	refMax  int64    // the largest position of an item of the iterated sequence they read (-1: none)
}

// covers reports whether record j's comparisons are covered.
func (c *runCheck) covers(j int) bool {
	return j < c.n && c.covered[j/64]&(1<<(j%64)) != 0
}

func (c *runCheck) cover(j int) { c.covered[j/64] |= 1 << (j % 64) }

// summarize reports whether comparison x, just evaluated by compare without ev.eval at the
// record of loop position lo.index0, is covered (see runCheck), adding its operands outside the
// loop, with their values, to c, and the positions it reads the items of name (the name the loop
// iterates) at to c.refMax.
func (fo *fixedOperands) summarize(x *compareExpr, name string, lo *loopObj, at *frame, c *runCheck) bool {
	// A run compares the same few expressions record after record: what summarize found of one
	// holds for the next unless it reads items of name (refMax moves with the position).
	for i, y := range fo.sumX {
		if y == x && fo.sumFixed[i] {
			return fo.sumOK[i]
		}
	}
	ok := fo.summarize1(x, name, lo, at, c)
	fixed := !readsName(x.first, name)
	for _, r := range x.rest {
		fixed = fixed && !readsName(r, name)
	}
	fo.sumX, fo.sumOK, fo.sumFixed = append(fo.sumX, x), append(fo.sumOK, ok), append(fo.sumFixed, fixed)
	return ok
}

// readsName reports whether operand o (in the shapes positionPure and loopFree take) subscripts
// name.
func readsName(o expr, name string) bool {
	switch n := o.(type) {
	case *attrExpr:
		return readsName(n.x, name)
	case *itemExpr:
		if root, ok := n.x.(*nameExpr); ok && root.name == name {
			return true
		}
		return readsName(n.x, name) || readsName(n.key, name)
	case *binaryExpr:
		return readsName(n.l, name) || readsName(n.r, name)
	}
	return false
}

func (fo *fixedOperands) summarize1(x *compareExpr, name string, lo *loopObj, at *frame, c *runCheck) bool {
	for i := -1; i < len(x.rest); i++ {
		o := x.first
		if i >= 0 {
			o = x.rest[i]
		}
		if positionPure(o, fo.item, name, lo, &c.refMax) {
			continue
		}
		if !loopFree(o, fo.item) {
			return false
		}
		if slices.Contains(c.ops, o) {
			continue
		}
		v, ok := fo.eval(o, lo, at)
		if !ok {
			return false
		}
		c.ops, c.vals = append(c.ops, o), append(c.vals, v)
	}
	return true
}

// holdAll reports whether every operand c kept gives the same value now.
func (fo *fixedOperands) holdAll(c *runCheck, lo *loopObj, at *frame) bool {
	for i, o := range c.ops {
		v, ok := fo.eval(o, lo, at)
		if !ok || !sameValue(v, c.vals[i]) {
			return false
		}
	}
	return true
}

// positionPure reports whether operand o is fixed by the iteration's position and item (see
// runCheck); item is the loop variable's name ("" when it is not a name). Items of name, the
// sequence the loop iterates, at non-negative positions computed from the position (positionInt)
// count too: the largest such position is folded into *refMax, and the next check takes the
// results only while those items are the same (below the items it found unchanged).
func positionPure(o expr, item, name string, lo *loopObj, refMax *int64) bool {
	switch n := o.(type) {
	case *constExpr:
		return true
	case *nameExpr:
		return item != "" && n.name == item
	case *attrExpr:
		if root, ok := n.x.(*nameExpr); ok && root.name == "loop" {
			switch n.name {
			case "index", "index0", "first", "depth", "depth0":
				return true
			}
			return false
		}
		return positionPure(n.x, item, name, lo, refMax)
	case *itemExpr:
		if _, slice := n.key.(*sliceExpr); slice {
			return false
		}
		if root, ok := n.x.(*nameExpr); ok && root.name == name && root.name != item {
			c, ok := positionInt(n.key, lo)
			if !ok || c < 0 {
				return false
			}
			*refMax = max(*refMax, c)
			return true
		}
		return positionPure(n.x, item, name, lo, refMax) && positionPure(n.key, item, name, lo, refMax)
	case *binaryExpr:
		return n.chain == nil && (n.op == "+" || n.op == "-") && positionPure(n.l, item, name, lo, refMax) &&
			positionPure(n.r, item, name, lo, refMax)
	}
	return false
}

// loopFree reports whether operand o reads neither loop nor the loop variable item, in the shapes
// fixedOperands evaluates (see runCheck).
func loopFree(o expr, item string) bool {
	switch n := o.(type) {
	case *constExpr:
		return true
	case *nameExpr:
		return n.name != "loop" && (item == "" || n.name != item)
	case *attrExpr:
		return loopFree(n.x, item)
	case *itemExpr:
		_, slice := n.key.(*sliceExpr)
		return !slice && loopFree(n.x, item) && loopFree(n.key, item)
	case *binaryExpr:
		return n.chain == nil && (n.op == "+" || n.op == "-") && loopFree(n.l, item) && loopFree(n.r, item)
	}
	return false
}

// fixedOperands evaluates a run's recorded comparisons as ev.eval(x, at) would, faster: operands
// that do not read loop (names, ns.last_query_index, messages|length - 1 …) are evaluated once per
// run (no replayed iteration rebinds or assigns anything outside itself, so they give the same
// values throughout), loop.<attr> is read from the loop object, and constants, attributes,
// subscripts, + and - are applied directly (what eval1 does for them). Anything else, or anything
// that fails, is left to ev.eval, which gives the same value or error.
type fixedOperands struct {
	exprs []expr // a run reads few distinct operands: a short list beats a map
	vals  []Value
	item  string // the loop variable's name (itemName), which changes from one record to the next
	// sumX are the comparisons summarize looked at, with what it found (sumOK) and whether that
	// holds at every position (sumFixed: the comparison reads no item by position).
	sumX            []*compareExpr
	sumOK, sumFixed []bool
	// ints are the comparisons compare looked at as intComparisons (notInts: not one).
	ints    []intComparison
	notInts []bool
}

func (fo *fixedOperands) compare(ev *evaluator, x *compareExpr, lo *loopObj, at *frame) (v Value, direct bool, err error) {
	if ic := fo.intCompare(x, lo, at); ic != nil {
		return Bool(ic.holds(lo)), true, nil
	}
	l, ok := fo.eval(x.first, lo, at)
	if !ok {
		v, err = ev.eval(x, at)
		return v, false, err
	}
	for i, op := range x.ops {
		r, ok := fo.eval(x.rest[i], lo, at)
		if !ok {
			v, err = ev.eval(x, at)
			return v, false, err
		}
		holds, err := compareOp(op, l, r)
		if err != nil {
			v, err = ev.eval(x, at)
			return v, false, err
		}
		if !holds {
			return Bool(false), true, nil
		}
		l = r
	}
	return Bool(true), true, nil
}

// intComparison is a comparison of loop.index or loop.index0 with an int outside the loop
// (Qwen3's loop.index0 > ns.last_query_index), which a run makes once per record: compared as
// compareOp compares two ints, without evaluating its operands again.
type intComparison struct {
	x       *compareExpr
	index   int64 // 1 for loop.index, 0 for loop.index0
	op      string
	n       int64 // the int
	swapped bool  // the int is on the left
}

// holds reports whether the comparison holds at the loop's position.
func (ic *intComparison) holds(lo *loopObj) bool {
	l, r := int64(lo.index0)+ic.index, ic.n
	if ic.swapped {
		l, r = r, l
	}
	switch ic.op {
	case "==":
		return l == r
	case "!=":
		return l != r
	case "<":
		return l < r
	case "<=":
		return l <= r
	case ">":
		return l > r
	}
	return l >= r
}

// intCompare returns x as an intComparison, or nil when it is not one.
func (fo *fixedOperands) intCompare(x *compareExpr, lo *loopObj, at *frame) *intComparison {
	for i := range fo.ints {
		if fo.ints[i].x == x {
			if fo.notInts[i] {
				return nil
			}
			return &fo.ints[i]
		}
	}
	ic, ok := fo.asIntCompare(x, lo, at)
	fo.ints, fo.notInts = append(fo.ints, ic), append(fo.notInts, !ok)
	if !ok {
		return nil
	}
	return &fo.ints[len(fo.ints)-1]
}

func (fo *fixedOperands) asIntCompare(x *compareExpr, lo *loopObj, at *frame) (intComparison, bool) {
	ic := intComparison{x: x}
	if len(x.ops) != 1 {
		return ic, false
	}
	switch ic.op = x.ops[0]; ic.op {
	case "==", "!=", "<", "<=", ">", ">=":
	default:
		return ic, false
	}
	pos, other := x.first, x.rest[0]
	if !loopIndex(pos) {
		pos, other, ic.swapped = other, pos, true
	}
	a, ok := pos.(*attrExpr)
	if !ok || !loopIndex(pos) || !loopFree(other, fo.item) {
		return ic, false
	}
	if a.name == "index" {
		ic.index = 1
	}
	v, ok := fo.eval(other, lo, at)
	if !ok || v.k != kInt {
		return ic, false
	}
	ic.n = v.n
	return ic, true
}

// loopIndex reports whether x is loop.index or loop.index0.
func loopIndex(x expr) bool {
	a, ok := x.(*attrExpr)
	if !ok || a.name != "index" && a.name != "index0" {
		return false
	}
	root, ok := a.x.(*nameExpr)
	return ok && root.name == "loop"
}

// eval evaluates o without ev.eval where it can; ok is false when it cannot (or o fails).
func (fo *fixedOperands) eval(o expr, lo *loopObj, at *frame) (Value, bool) {
	v, ok, _ := fo.operand(o, lo, at)
	return v, ok
}

// eval1 is eval without the cache (operand answers constants itself); byLoop reports that the
// value depends on the loop object (and so changes from one record to the next).
func (fo *fixedOperands) eval1(o expr, lo *loopObj, at *frame) (v Value, ok, byLoop bool) {
	switch n := o.(type) {
	case *nameExpr:
		if n.name == "loop" {
			return Value{}, false, true
		}
		if fo.item != "" && n.name == fo.item {
			return resolveName(at, n.name), true, true
		}
		return resolveName(at, n.name), true, false
	case *attrExpr:
		if root, isName := n.x.(*nameExpr); isName && root.name == "loop" {
			v, ok := loopAttr(lo, n.name)
			return v, ok, true
		}
		x, ok, byLoop := fo.operand(n.x, lo, at)
		if !ok {
			return Value{}, false, byLoop
		}
		v, err := getAttr(x, n.name)
		return v, err == nil, byLoop
	case *itemExpr:
		if _, slice := n.key.(*sliceExpr); slice {
			return Value{}, false, false
		}
		x, ok, byLoopX := fo.operand(n.x, lo, at)
		if !ok {
			return Value{}, false, byLoopX
		}
		key, ok, byLoopK := fo.operand(n.key, lo, at)
		if !ok {
			return Value{}, false, byLoopX || byLoopK
		}
		v, err := getItem(x, key)
		return v, err == nil, byLoopX || byLoopK
	case *binaryExpr:
		if n.chain != nil || (n.op != "+" && n.op != "-") {
			return Value{}, false, false
		}
		l, ok, byLoopL := fo.operand(n.l, lo, at)
		if !ok {
			return Value{}, false, byLoopL
		}
		r, ok, byLoopR := fo.operand(n.r, lo, at)
		if !ok {
			return Value{}, false, byLoopL || byLoopR
		}
		v, err := binaryOp(n.op, l, r)
		return v, err == nil, byLoopL || byLoopR
	}
	return Value{}, false, false
}

// operand evaluates o through the cache of loop-independent values; byLoop reports that o
// depends on the loop object (and so is evaluated for every record).
func (fo *fixedOperands) operand(o expr, lo *loopObj, at *frame) (v Value, ok, byLoop bool) {
	if c, isConst := o.(*constExpr); isConst {
		return c.v, true, false
	}
	for i, x := range fo.exprs {
		if x == o {
			return fo.vals[i], true, false
		}
	}
	v, ok, byLoop = fo.eval1(o, lo, at)
	if ok && !byLoop {
		fo.exprs, fo.vals = append(fo.exprs, o), append(fo.vals, v)
	}
	return v, ok, byLoop
}
