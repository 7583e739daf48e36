package jinja

import (
	"math/big"
	"slices"
	"strings"

	"github.com/stitchllm/stitch/internal/prefix"
)

// A chat template renders a conversation that only grows between turns, and most of its output
// comes from one top-level loop over `messages` whose iterations depend on little besides their
// own message. ExecuteMemo records, for every iteration of the template's top-level for loops,
// its output and every value it read from outside itself; a later ExecuteMemo replays an
// iteration instead of running it when all of those reads give the same values again. Templates
// are deterministic functions of what they read, so a replayed iteration writes exactly what
// running it would have written.
//
// Only loops over a variable (for message in messages) are recorded, and loops over a chain of
// per-item filters of one (filtermemo.go): another derived sequence (messages[::-1]) moves its
// items between positions as the conversation grows.
//
// What an iteration can observe from outside itself, and how each is recorded:
//   - its item: compared whole;
//   - attributes of its loop object (loop.index0, loop.last …): recorded by name;
//   - names bound in the template's top frame or the caller's variables, and globals, read
//     alone or at the root of an attribute/subscript path (messages[loop.index0 - 1].role):
//     recorded with the path, so an unrelated change elsewhere in `messages` does not matter;
//   - comparisons made only of those and constants (loop.index0 > ns.last_query_index), or of
//     those, the loop variable and constants (message == user_messages[-1], itemexpr.go):
//     recorded by their result, which is what the iteration depends on.
//
// An iteration may assign attributes of one namespace bound outside it (DeepSeek's
// `set ns.is_tool = false`): the record keeps each attribute's last value (scalars only) and
// replaying it assigns them again, after checking, as for every outer read, the attributes it read
// before assigning them. Reads of an attribute after the iteration assigned it are its own state,
// not recorded; a comparison recorded by its result may not read one. The namespace must have no
// other name among the outer names, when recorded and when replayed, so that a read through
// another name cannot be the same object.
//
// Everything else that could carry state between iterations makes the iteration unreplayable:
// assigning attributes of a second namespace, or a value that is not a scalar, using the loop
// object other than through an attribute, calling strftime_now (time). Values that may change behind a recorded pointer (namespaces, loop objects,
// joiners and other closures, macros closing over anything but the top frame) never compare
// equal, so an iteration that read one is always run again.

// Memo is what one ExecuteMemo recorded about its top-level loops. It is immutable once returned
// and may be used by several later executions, concurrently.
type Memo struct {
	t     *Template
	loops map[*forNode]recordList // records.go
	// text is the execution's output; common the length of the prefix it shares with the output
	// of the execution it replayed from (see CommonPrefix).
	text     string
	common   int
	compared int // bytes compared to find common (at most the shorter text's length)
	// arena holds text (as its first bytes), for the next execution to share (output.go).
	arena *textArena
	bulk  int // records bulkReplay replayed (tests check it is used)
	// checks are what bulkReplay found of its runs' comparisons, per loop (runCheck); checked
	// counts the records whose comparisons it took from the previous check (tests).
	checks  map[*forNode]*runCheck
	checked int
	// skipped counts the iterations guardSkip skipped (tests).
	skipped int
	// guards are the guarded loops' per-item caches (guard.go), shared along a conversation.
	guards map[*forNode]*guardCache
	// filters are the per-item filter chains' last evaluations (filtermemo.go).
	filters map[*filterExpr]*filterRun
}

// CommonPrefix returns the length of the longest common prefix of this execution's output and
// the output of the execution whose memo it was given (0 without one). It is found without
// comparing the bytes replayed iterations wrote at the same offsets as before: they are equal by
// construction. The earlier output is not kept for this.
func (m *Memo) CommonPrefix() int { return m.common }

// iterRecord is one iteration of a memoized loop. A conversation's records pass from one memo to
// the next, shared or copied (records.go), and bulkReplay reads a run of them at once, so what
// every record has is kept small and the rest is behind detail.
type iterRecord struct {
	item Value
	// start and end locate the iteration's output in its execution's output (Memo.out reads it
	// back); start is -1 when it was written elsewhere (a set block), and detail.captured holds it.
	// Offsets rather than a substring: a record replayed at the same offset is taken unchanged,
	// and no record pins an earlier execution's text.
	start, end int
	refMax     int64 // what bulkReplay checks (classify)
	detail     *iterDetail
	ok         bool // false: the iteration did something replay cannot reproduce
	ctl        control
	cls        uint8 // what bulkReplay checks (classify)
}

// iterDetail is what a record read from outside its iteration and wrote to a namespace, which
// most records of a chat template's message loop have little or none of; it is shared by the
// copies of the record, and never changed once the iteration is recorded.
type iterDetail struct {
	loop  []loopRead
	outer []outerRead
	exprs []exprRead
	// writes are the namespace attributes the iteration assigned, with their last values, in
	// the order first assigned; replay assigns them again.
	writes []nsWrite
	// captured is the output of an iteration written elsewhere than the main output (start -1),
	// copied so that it does not pin the execution's other text.
	captured string
}

// reads returns r's detail, made when r has none (only for the record being made).
func (r *iterRecord) reads() *iterDetail {
	if r.detail == nil {
		r.detail = &iterDetail{}
	}
	return r.detail
}

// loopReads, outerReads, exprReads and nsWrites return r's detail of each kind (nil without).
func (r *iterRecord) loopReads() []loopRead {
	if r.detail == nil {
		return nil
	}
	return r.detail.loop
}

func (r *iterRecord) outerReads() []outerRead {
	if r.detail == nil {
		return nil
	}
	return r.detail.outer
}

func (r *iterRecord) exprReads() []exprRead {
	if r.detail == nil {
		return nil
	}
	return r.detail.exprs
}

func (r *iterRecord) nsWrites() []nsWrite {
	if r.detail == nil {
		return nil
	}
	return r.detail.writes
}

// outLen returns the length of r's output.
func (r *iterRecord) outLen() int {
	if r.start < 0 {
		return len(r.detail.captured)
	}
	return r.end - r.start
}

// out returns the output of r, one of m's records.
func (m *Memo) out(r *iterRecord) string {
	if r.start < 0 {
		return r.detail.captured
	}
	return m.text[r.start:r.end]
}

// exprRead is a comparison made only of outer reads, loop attributes and constants
// (loop.index0 > ns.last_query_index), recorded by its result: the iteration depends on whether
// the comparison holds, not on the values compared.
type exprRead struct {
	x *compareExpr
	v Value
	// positional: x reads only constants, the loop's position (loop.index0 …) and items of the
	// iterated sequence at positions fixed by it, all of them below refMax+1 (positionalRefs);
	// bulkReplay then knows its result without evaluating it.
	positional bool
	refMax     int64
}

// nsWrite is an attribute of the namespace bound to name that an iteration assigned.
type nsWrite struct {
	name, attr string
	v          Value
}

type loopRead struct {
	attr string
	v    Value
}

// pathStep is one attribute (attr) or subscript (key) step of a recorded path.
type pathStep struct {
	attr bool
	name string
	key  Value
}

type outerRead struct {
	name  string
	steps []pathStep
	v     Value
}

// memoState is one execution's memo bookkeeping.
type memoState struct {
	prev      *Memo // nil: nothing to replay
	next      *Memo
	top, root *frame
	// The iteration being recorded, its frame and loop object; cur is nil outside memoized
	// iterations.
	cur  *iterRecord
	iter *frame
	loop *loopObj
	// iterName is the name the loop being recorded iterates (messages); item the name of its
	// loop variable ("" when that is not a name: itemexpr.go).
	iterName, item string
	// wns is the namespace the iteration being recorded assigned attributes of (nil: none yet),
	// assigned through the name wname; wattrs are the attributes assigned so far.
	wns    *Map
	wname  string
	wattrs []string
	// main is the execution's output, where the records' offsets point.
	main *output
	// lcp is the length of the main output's prefix known equal to prev.text; lcpDone is set
	// once they differ (or prev.text ends), after which lcp is final.
	lcp     int
	lcpDone bool
	// compared counts the bytes syncLCP looked at (tests check replays are skipped).
	compared int
}

// syncLCP extends lcp over the main output written since, comparing it with prev.text.
func (ms *memoState) syncLCP() {
	if ms.prev == nil || ms.lcpDone {
		return
	}
	out, prev := ms.main.String(), ms.prev.text
	if a, k := ms.main.shared(); a != nil && a == ms.prev.arena && k > ms.lcp {
		// The first k bytes of the output are the very bytes prev.text begins with (when k
		// exceeds prev.text's length, the rest was written after it, by this execution or an
		// earlier continuation): equal without comparing.
		ms.lcp = min(k, len(prev))
	}
	n := prefix.Len(out[ms.lcp:], prev[min(ms.lcp, len(prev)):])
	ms.compared += min(len(out), len(prev)) - min(ms.lcp, len(prev))
	ms.lcp += n
	if ms.lcp < len(out) || ms.lcp >= len(prev) {
		ms.lcpDone = true
	}
}

// replayLCP is called before a replayed record r is written to ev.out: when everything written so
// far equals prev.text and r was written at this very offset before, the bytes it writes now are
// equal too, so lcp moves past them without a comparison. It returns whether it did.
func (ms *memoState) replayLCP(ev *evaluator, r *iterRecord) bool {
	if ev.out != ms.main || ms.prev == nil {
		return false
	}
	ms.syncLCP()
	if ms.lcpDone || r.start < 0 || r.start != ms.lcp || ms.lcp != ms.main.Len() || r.end > len(ms.prev.text) {
		return false
	}
	ms.lcp = r.end
	return true
}

// record completes rec, whose iteration wrote ev.out[start:]: it locates the output in the main
// output, or, when it was written elsewhere (a loop inside a set block), copies it into the
// record, so that no record keeps an earlier execution's output alive (a conversation's memos
// would otherwise hold every earlier prompt). A detail shared with other records is not changed.
func (ms *memoState) record(ev *evaluator, rec *iterRecord, start int) {
	if ev.out == ms.main {
		rec.start, rec.end = start, ev.out.Len()
		return
	}
	d := iterDetail{}
	if rec.detail != nil {
		d = *rec.detail
	}
	d.captured = strings.Clone(ev.out.String()[start:])
	rec.start, rec.end, rec.detail = -1, 0, &d
}

// finish sets the execution's final output, where its records' offsets point, and completes the
// common prefix with the previous text.
func (ms *memoState) finish(text string, arena *textArena) {
	ms.next.arena = arena
	ms.next.text = text
	if ms.prev != nil {
		ms.syncLCP()
		ms.next.common = ms.lcp
		ms.next.compared = ms.compared
	}
}

// ExecuteMemo renders like Execute and also returns a Memo of the template's top-level loops;
// with prev (from an earlier ExecuteMemo of this template; nil is allowed), iterations whose
// recorded reads are unchanged are replayed from prev instead of run. The output is identical to
// Execute's with the same vars.
func (t *Template) ExecuteMemo(vars map[string]Value, prev *Memo) (string, *Memo, error) {
	if prev != nil && prev.t != t {
		prev = nil
	}
	ms := &memoState{prev: prev, next: &Memo{t: t, loops: map[*forNode]recordList{}}}
	out, err := t.execute(vars, ms)
	if err != nil {
		return "", nil, err
	}
	return out, ms.next, nil
}

// memoizes reports whether the for loop n, about to run in frame f, is one ExecuteMemo records:
// a non-recursive loop directly in the template's top frame over a variable (for message in
// messages), or over a chain of per-item filters of one (memoizesFiltered). Loops over other
// derived sequences (messages[::-1]) are not worth recording: their items move between positions
// when the conversation grows.
func (ev *evaluator) memoizes(n *forNode, f *frame, depth int) bool {
	_, overName := n.iter.(*nameExpr)
	return ev.memo != nil && depth == 0 && !n.recursive && (overName || memoizesFiltered(n)) && f == ev.memo.top && ev.memo.cur == nil
}

// replayable reports whether the recorded iteration r would run exactly as recorded for item it
// at the loop position lo, with the top frame f as it is now; at is a frame binding `loop` (to
// lo) above f, and the loop variable to it (itemFrame), where recorded comparisons are evaluated
// again. ns is the namespace r's writes
// go to (nil when it has none), for assign.
func (ev *evaluator) replayable(r *iterRecord, it Value, lo *loopObj, f, at *frame) (ns *Map, ok bool) {
	if !r.ok || !sameValue(r.item, it) {
		return nil, false
	}
	if r.detail == nil {
		return nil, true
	}
	d := r.detail
	for _, lr := range d.loop {
		v, _ := loopAttr(lo, lr.attr)
		if !sameValue(v, lr.v) {
			return nil, false
		}
	}
	for i := range d.outer {
		v, ok := readPath(f, &d.outer[i])
		if !ok || !sameValue(v, d.outer[i].v) {
			return nil, false
		}
	}
	for _, er := range d.exprs {
		v, err := ev.eval(er.x, at)
		if err != nil || !sameValue(v, er.v) {
			return nil, false
		}
	}
	if len(d.writes) == 0 {
		return nil, true
	}
	return ev.memo.writable(d.writes[0].name, f)
}

// replayWrites applies a replayed record's namespace writes to ns (what replayable returned).
func replayWrites(r *iterRecord, ns *Map) {
	for _, w := range r.nsWrites() {
		ns.set(String(w.attr), w.v)
	}
}

// writable returns the namespace an iteration may assign attributes of through name: one bound
// outside the iteration that no other outer name is bound to.
func (ms *memoState) writable(name string, f *frame) (*Map, bool) {
	v, w := f.lookupFrame(name)
	if v.k != kNamespace || !ms.outer(w) {
		return nil, false
	}
	obj := v.mapv()
	for _, fr := range []*frame{ms.top, ms.root} {
		if fr == nil {
			continue
		}
		for i, n := range fr.names {
			if n != name && fr.vals[i].k == kNamespace && fr.vals[i].mapv() == obj {
				return nil, false
			}
		}
		for n, uv := range fr.user {
			if n != name && uv.k == kNamespace && uv.mapv() == obj {
				return nil, false
			}
		}
	}
	return obj, true
}

// recordWrite notes that the iteration being recorded assigned v to the attribute attr of the
// namespace ns, bound outside it to name.
func (ms *memoState) recordWrite(name string, ns Value, attr string, v Value, f *frame) {
	cur := ms.cur
	switch v.k {
	case kNone, kBool, kInt, kFloat, kString:
	default:
		cur.ok = false // a list or map could change behind the recorded value
		return
	}
	if ns.k != kNamespace {
		return // the assignment fails
	}
	if ms.wns == nil {
		obj, ok := ms.writable(name, f)
		if !ok || obj != ns.mapv() {
			cur.ok = false
			return
		}
		ms.wns, ms.wname = obj, name
	} else if ms.wns != ns.mapv() || ms.wname != name {
		cur.ok = false
		return
	}
	if !slices.Contains(ms.wattrs, attr) {
		ms.wattrs = append(ms.wattrs, attr)
	}
	d := cur.reads()
	for i := range d.writes {
		if d.writes[i].attr == attr {
			d.writes[i].v = v
			return
		}
	}
	d.writes = append(d.writes, nsWrite{name: name, attr: attr, v: v})
}

// readsAssigned reports whether comparison x (replayableExpr's shapes) reads an attribute the
// iteration being recorded has assigned.
func (ms *memoState) readsAssigned(x expr, f *frame) bool {
	switch n := x.(type) {
	case *attrExpr:
		if root, ok := n.x.(*nameExpr); ok && slices.Contains(ms.wattrs, n.name) {
			if v, _ := f.lookupFrame(root.name); v.k == kNamespace && v.mapv() == ms.wns {
				return true
			}
		}
		return ms.readsAssigned(n.x, f)
	case *itemExpr:
		return ms.readsAssigned(n.x, f) || ms.readsAssigned(n.key, f)
	case *unaryExpr:
		return ms.readsAssigned(n.x, f)
	case *binaryExpr:
		for _, c := range n.chain {
			if ms.readsAssigned(c, f) {
				return true
			}
		}
		return n.chain == nil && (ms.readsAssigned(n.l, f) || ms.readsAssigned(n.r, f))
	case *compareExpr:
		if ms.readsAssigned(n.first, f) {
			return true
		}
		for _, r := range n.rest {
			if ms.readsAssigned(r, f) {
				return true
			}
		}
	}
	return false
}

// memoCompare evaluates a comparison inside a recorded iteration. When it reads only outer
// values, the iteration's loop object and constants, or outer values with the loop variable
// (itemexpr.go), it is recorded by its result (ok true); otherwise the caller evaluates it as
// usual, recording its operands.
func (ev *evaluator) memoCompare(x *compareExpr, f *frame) (v Value, ok bool, err error) {
	// itemOnly first: it only looks at the names, and most comparisons of a message loop read
	// the message alone (message.role == "user").
	if ev.memo.item != "" && itemOnly(x, ev.memo.item) || !ev.memo.replayableExpr(x, f) {
		return Value{}, false, nil
	}
	ms := ev.memo
	if ms.wns != nil && ms.readsAssigned(x, f) {
		// Its result depends on the iteration's own state, which replay does not evaluate.
		ms.cur.ok = false
		return Value{}, false, nil
	}
	cur := ms.cur
	ms.cur = nil // the operands are covered by the result
	v, err = ev.eval1(x, f)
	ms.cur = cur
	if err == nil {
		er := exprRead{x: x, v: v}
		if ms.iterName != "" {
			er.refMax = -1
			er.positional = positionalRefs(x, ms.iterName, ms.loop, &er.refMax)
		}
		d := cur.reads()
		d.exprs = append(d.exprs, er)
	}
	return v, true, err
}

// replayableExpr reports whether x, evaluated in frame f inside the recorded iteration, can be
// evaluated again at the start of the iteration with the same result: it is made of constants,
// names bound outside the iteration (not strftime_now), the iteration's loop object, its loop
// variable still bound to the item (itemexpr.go), and attribute, subscript, comparison,
// arithmetic and logical operations on them.
func (ms *memoState) replayableExpr(x expr, f *frame) bool {
	switch n := x.(type) {
	case *constExpr:
		return true
	case *nameExpr:
		// Replay binds `loop` (to the iteration's loop object) above the top frame, so a `loop`
		// that meant something else here (an undefined name inside a macro) is not replayable.
		v, w := f.lookupFrame(n.name)
		if n.name == "loop" {
			return w == ms.iter && v.k == kLoop && v.o == ms.loop
		}
		if ms.item != "" && n.name == ms.item {
			return ms.readsItem(v, w) // replay binds it to the item too (itemexpr.go)
		}
		return ms.outer(w) && n.name != "strftime_now"
	case *attrExpr:
		return ms.replayableExpr(n.x, f)
	case *itemExpr:
		_, slice := n.key.(*sliceExpr)
		return !slice && ms.replayableExpr(n.x, f) && ms.replayableExpr(n.key, f)
	case *unaryExpr:
		return ms.replayableExpr(n.x, f)
	case *binaryExpr:
		if n.chain != nil {
			for _, c := range n.chain {
				if !ms.replayableExpr(c, f) {
					return false
				}
			}
			return true
		}
		return ms.replayableExpr(n.l, f) && ms.replayableExpr(n.r, f)
	case *compareExpr:
		if !ms.replayableExpr(n.first, f) {
			return false
		}
		for _, r := range n.rest {
			if !ms.replayableExpr(r, f) {
				return false
			}
		}
		return true
	}
	return false
}

// readPath evaluates a recorded outer read now. Names resolve from the top frame: the recorded
// read found its name there, in the caller's variables or among the globals, and inner frames of
// an iteration that runs as recorded bind the same names as when it was recorded.
func readPath(f *frame, r *outerRead) (Value, bool) {
	v := resolveName(f, r.name)
	for _, s := range r.steps {
		var err error
		if s.attr {
			v, err = getAttr(v, s.name)
		} else {
			v, err = getItem(v, s.key)
		}
		if err != nil {
			return Value{}, false
		}
	}
	return v, true
}

// outer reports whether frame w (nil: not bound in any frame) lies outside the iteration being
// recorded.
func (ms *memoState) outer(w *frame) bool { return w == nil || w == ms.top || w == ms.root }

// memoName evaluates a name inside a recorded iteration.
func (ev *evaluator) memoName(name string, f *frame) Value {
	ms := ev.memo
	v, w := f.lookupFrame(name)
	switch {
	case w == ms.iter && v.k == kLoop:
		ms.cur.ok = false // the loop object escapes: its later reads would go unrecorded
	case ms.outer(w):
		if w == nil {
			v = resolveName(f, name)
			if name == "strftime_now" {
				ms.cur.ok = false
			}
		}
		d := ms.cur.reads()
		d.outer = append(d.outer, outerRead{name: name, v: v})
	}
	return v
}

// memoPath evaluates an attribute/subscript path inside a recorded iteration when its root is
// outside the iteration (or is the iteration's loop object), recording the value the path reads
// rather than the whole root. ok is false when x is not such a path; the caller then evaluates
// it as usual.
func (ev *evaluator) memoPath(x expr, f *frame) (v Value, ok bool, err error) {
	var chain []expr // leaf first
	root := x
walk:
	for {
		switch n := root.(type) {
		case *attrExpr:
			chain = append(chain, n)
			root = n.x
		case *itemExpr:
			if _, slice := n.key.(*sliceExpr); slice {
				return Value{}, false, nil
			}
			chain = append(chain, n)
			root = n.x
		case *nameExpr:
			break walk
		default:
			return Value{}, false, nil
		}
	}
	ms := ev.memo
	name := root.(*nameExpr).name
	rv, w := f.lookupFrame(name)
	loopRoot := w == ms.iter && rv.k == kLoop
	if !loopRoot && !ms.outer(w) {
		return Value{}, false, nil
	}
	if ms.wns != nil && rv.k == kNamespace && rv.mapv() == ms.wns {
		a, isAttr := chain[len(chain)-1].(*attrExpr)
		if isAttr && slices.Contains(ms.wattrs, a.name) {
			// The iteration's own state (it assigned the attribute): evaluated, not recorded —
			// unless a subscript's key reads something (loop.revindex, an outer name), which
			// would then go unrecorded.
			for _, c := range chain {
				if it, isItem := c.(*itemExpr); isItem {
					if _, isConst := it.key.(*constExpr); !isConst {
						ms.cur.ok = false
					}
				}
			}
			cur := ms.cur
			ms.cur = nil
			v, err = ev.eval1(x, f)
			ms.cur = cur
			return v, true, err
		}
	}
	if loopRoot {
		a, isAttr := chain[len(chain)-1].(*attrExpr)
		if !isAttr {
			return Value{}, false, nil // memoName marks the iteration unreplayable
		}
		lv, _ := getAttr(rv, a.name)
		d := ms.cur.reads()
		d.loop = append(d.loop, loopRead{attr: a.name, v: lv})
		v, err = ev.applyPath(lv, chain[:len(chain)-1], f, nil)
		return v, true, err
	}
	if w == nil {
		rv = resolveName(f, name)
		if name == "strftime_now" {
			ms.cur.ok = false
		}
	}
	steps := make([]pathStep, 0, len(chain))
	var receiver Value
	v, err = ev.applyPath(rv, chain, f, func(s pathStep, before Value) {
		steps = append(steps, s)
		receiver = before
	})
	if err != nil {
		return Value{}, true, err
	}
	d := ms.cur.reads()
	if v.k == kFunc && len(steps) > 0 {
		// A bound method is fresh each time; what it does follows from its receiver.
		d.outer = append(d.outer, outerRead{name: name, steps: steps[:len(steps)-1], v: receiver})
	} else {
		d.outer = append(d.outer, outerRead{name: name, steps: steps, v: v})
	}
	return v, true, nil
}

// applyPath applies chain (leaf first) to v from the root outwards, as eval1 would, calling step
// (when non-nil) with each step and the value it applies to.
func (ev *evaluator) applyPath(v Value, chain []expr, f *frame, step func(s pathStep, before Value)) (Value, error) {
	for i := len(chain) - 1; i >= 0; i-- {
		if err := ev.burn(); err != nil {
			return Value{}, err
		}
		before := v
		var err error
		switch n := chain[i].(type) {
		case *attrExpr:
			v, err = getAttr(v, n.name)
			if step != nil {
				step(pathStep{attr: true, name: n.name}, before)
			}
		case *itemExpr:
			var key Value
			if key, err = ev.eval(n.key, f); err == nil {
				v, err = getItem(v, key)
				if step != nil {
					step(pathStep{key: key}, before)
				}
			}
		}
		if err != nil {
			return Value{}, atLine(err, chain[i].exprSpan())
		}
	}
	return v, nil
}

// sameValue reports whether a and b are indistinguishable to a template: same kind and
// representation (1, 1.0 and True are not the same here), same items in the same order.
// Values that can change behind their pointer, or whose behaviour depends on state not
// recorded (namespaces, loop objects, closures), are never the same.
func sameValue(a, b Value) bool {
	if a.k != b.k || a.n != b.n || a.s != b.s {
		return false
	}
	switch a.k {
	case kBig:
		return a.o.(*big.Int).Cmp(b.o.(*big.Int)) == 0
	case kList, kTuple:
		la, lb := a.o.(*listObj), b.o.(*listObj)
		if la == lb {
			return true
		}
		if la.view != lb.view || len(la.items) != len(lb.items) || (la.rng == nil) != (lb.rng == nil) ||
			la.rng != nil && *la.rng != *lb.rng {
			return false
		}
		for i := range la.items {
			if !sameValue(la.items[i], lb.items[i]) {
				return false
			}
		}
		return true
	case kMap:
		ma, mb := a.mapv(), b.mapv()
		if ma == mb {
			return true
		}
		if len(ma.keys) != len(mb.keys) {
			return false
		}
		for i := range ma.keys {
			if !sameValue(ma.keys[i], mb.keys[i]) || !sameValue(ma.vals[i], mb.vals[i]) {
				return false
			}
		}
		return true
	case kFunc:
		fa, fb := a.o.(*funcObj), b.o.(*funcObj)
		return fa == fb || fa.def != nil && fa.def == fb.def && fa.topLevel && fb.topLevel
	case kNamespace, kLoop:
		return false
	}
	return true
}
