package bpe

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// regex is a compiled pattern of the general Split engine (regex_parse.go). Matching is
// backtracking in priority order, which is Oniguruma's semantics: at a start position the first
// successful path wins (alternatives left to right, greedy quantifiers longest first, lazy ones
// shortest first). A search tries start positions left to right, skipping those whose code point
// cannot begin a match.
//
// Backtracking can be exponential; when one attempt has taken more than a fixed number of steps the
// matcher remembers every (instruction, position) state it has left without success and never
// explores one twice, which bounds an attempt by instructions × positions. That memo is exact: the
// program has no captures or counters, so a state's outcome does not depend on how it was reached,
// and repetitions of expressions that can match empty are refused, so a state is never re-entered
// while it is still being explored.
type regex struct {
	prog  []reInst
	first *runeClass // code points a match can start with; nil: any position, or empty matches
	pool  sync.Pool  // *reMachine
}

type reOp uint8

const (
	opClass  reOp = iota // one code point of cls
	opSplit              // try x, then y
	opJmp                // go to x
	opMatch              // success
	opLook               // sub matches here (or, if neg, does not); consumes nothing
	opAtomic             // sub's first match from here, without backtracking into it
)

type reInst struct {
	op   reOp
	x, y int
	cls  *runeClass
	sub  *regex
	neg  bool
}

// maxProgram bounds the compiled size (intervals are unrolled).
const maxProgram = 20000

func compileRegex(pattern string) (*regex, error) {
	n, err := parseRegex(pattern)
	if err != nil {
		return nil, err
	}
	re, err := compileNode(n)
	if err != nil {
		return nil, err
	}
	if !nullable(n) {
		re.first = firstClass(n)
	}
	return re, nil
}

func compileNode(n *reNode) (*regex, error) {
	c := &reCompiler{}
	if err := c.emit(n); err != nil {
		return nil, err
	}
	c.add(reInst{op: opMatch})
	if len(c.prog) > maxProgram {
		return nil, fmt.Errorf("pattern too large (%d instructions)", len(c.prog))
	}
	return &regex{prog: c.prog}, nil
}

type reCompiler struct{ prog []reInst }

func (c *reCompiler) add(i reInst) int {
	c.prog = append(c.prog, i)
	return len(c.prog) - 1
}

func (c *reCompiler) emit(n *reNode) error {
	if len(c.prog) > maxProgram {
		return fmt.Errorf("pattern too large")
	}
	switch n.kind {
	case reClass:
		c.add(reInst{op: opClass, cls: n.cls})
	case reConcat:
		for _, s := range n.subs {
			if err := c.emit(s); err != nil {
				return err
			}
		}
	case reAlt:
		var jumps []int
		for i, s := range n.subs {
			if i < len(n.subs)-1 {
				split := c.add(reInst{op: opSplit})
				c.prog[split].x = len(c.prog)
				if err := c.emit(s); err != nil {
					return err
				}
				jumps = append(jumps, c.add(reInst{op: opJmp}))
				c.prog[split].y = len(c.prog)
			} else if err := c.emit(s); err != nil {
				return err
			}
		}
		for _, j := range jumps {
			c.prog[j].x = len(c.prog)
		}
	case reLook, reAtomic:
		sub, err := compileNode(n.subs[0])
		if err != nil {
			return err
		}
		op := opLook
		if n.kind == reAtomic {
			op = opAtomic
		}
		c.add(reInst{op: op, sub: sub, neg: n.neg})
	case reRepeat:
		if n.poss {
			// x?+ x*+ x++ are (?>x?) (?>x*) (?>x+).
			inner := *n
			inner.poss = false
			return c.emit(&reNode{kind: reAtomic, subs: []*reNode{&inner}})
		}
		body := n.subs[0]
		for range n.min {
			if err := c.emit(body); err != nil {
				return err
			}
		}
		if n.max < 0 {
			loop := c.add(reInst{op: opSplit})
			if err := c.emit(body); err != nil {
				return err
			}
			c.add(reInst{op: opJmp, x: loop})
			c.setSplit(loop, loop+1, len(c.prog), n.lazy)
			return nil
		}
		// max-min optional copies, nested: (x(x(x)?)?)?
		var splits []int
		for range n.max - n.min {
			splits = append(splits, c.add(reInst{op: opSplit}))
			if err := c.emit(body); err != nil {
				return err
			}
		}
		for _, s := range splits {
			c.setSplit(s, s+1, len(c.prog), n.lazy)
		}
	}
	return nil
}

// setSplit points a split at body and out, preferring body unless lazy.
func (c *reCompiler) setSplit(at, body, out int, lazy bool) {
	if lazy {
		body, out = out, body
	}
	c.prog[at].x, c.prog[at].y = body, out
}

// firstClass returns a class containing every code point a match of n (which is not nullable) can
// start with, or nil when that is not simply known.
func firstClass(n *reNode) *runeClass {
	var items []classItem
	var walk func(n *reNode) bool // reports whether it added a complete set
	walk = func(n *reNode) bool {
		switch n.kind {
		case reClass:
			if n.cls.neg {
				return false
			}
			items = append(items, n.cls.items...)
			return true
		case reAlt:
			for _, s := range n.subs {
				if !walk(s) {
					return false
				}
			}
			return true
		case reConcat:
			for _, s := range n.subs {
				if s.kind == reLook {
					return false
				}
				if !walk(s) {
					return false
				}
				if !nullable(s) {
					return true
				}
			}
			return false
		case reRepeat, reAtomic:
			return walk(n.subs[0])
		}
		return false
	}
	if !walk(n) {
		return nil
	}
	cls := &runeClass{items: items}
	cls.finish()
	return cls
}

// reMachine holds the reusable state of one search.
type reMachine struct {
	stack []reThread
	memo  map[uint64]struct{}
}

type reThread struct{ pc, pos int }

// memoAfter is how many steps an attempt runs before it starts to remember failed states.
const memoAfter = 1 << 14

// matchAt returns the end of the match of re starting at s[pos], if there is one.
func (re *regex) matchAt(s string, pos int) (int, bool) {
	m, _ := re.pool.Get().(*reMachine)
	if m == nil {
		m = &reMachine{}
	}
	end, ok := re.run(m, s, pos)
	re.pool.Put(m)
	return end, ok
}

func (re *regex) run(m *reMachine, s string, start int) (int, bool) {
	stack := append(m.stack[:0], reThread{0, start})
	steps := 0
	memo := false
	if len(m.memo) > 0 {
		clear(m.memo)
	}
	defer func() { m.stack = stack[:0] }()
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		pc, pos := t.pc, t.pos
	thread:
		for {
			steps++
			if steps > memoAfter {
				if !memo {
					memo = true
					if m.memo == nil {
						m.memo = map[uint64]struct{}{}
					}
				}
				key := uint64(pc)<<40 | uint64(pos)
				if _, seen := m.memo[key]; seen {
					break thread
				}
				m.memo[key] = struct{}{}
			}
			in := &re.prog[pc]
			switch in.op {
			case opClass:
				if pos >= len(s) {
					break thread
				}
				r, n := rune(s[pos]), 1
				if r >= utf8.RuneSelf {
					r, n = utf8.DecodeRuneInString(s[pos:])
				}
				if !in.cls.has(r) {
					break thread
				}
				pos += n
				pc++
			case opSplit:
				stack = append(stack, reThread{in.y, pos})
				pc = in.x
			case opJmp:
				pc = in.x
			case opMatch:
				return pos, true
			case opLook:
				_, ok := in.sub.matchAt(s, pos)
				if ok == in.neg {
					break thread
				}
				pc++
			case opAtomic:
				end, ok := in.sub.matchAt(s, pos)
				if !ok {
					break thread
				}
				pos = end
				pc++
			}
		}
	}
	return 0, false
}

// find returns the leftmost match of re in s at or after from: its start and end, or start -1.
func (re *regex) find(s string, from int) (int, int) {
	m, _ := re.pool.Get().(*reMachine)
	if m == nil {
		m = &reMachine{}
	}
	defer re.pool.Put(m)
	for i := from; i <= len(s); {
		var r rune
		n := 1
		if i < len(s) {
			r = rune(s[i])
			if r >= utf8.RuneSelf {
				r, n = utf8.DecodeRuneInString(s[i:])
			}
		}
		if re.first == nil || (i < len(s) && re.first.has(r)) {
			if end, ok := re.run(m, s, i); ok {
				return i, end
			}
		}
		if i == len(s) {
			break
		}
		i += n
	}
	return -1, -1
}

// findAll appends the non-overlapping matches of re in s, as the onig crate's find_iter yields
// them: each search starts where the previous match ended, and an empty match right where the
// previous match ended is skipped by moving one code point on.
func (re *regex) findAll(dst []span, s string) []span {
	pos, lastEnd := 0, -1
	for pos <= len(s) {
		a, b := re.find(s, pos)
		if a < 0 {
			break
		}
		if a == b && b == lastEnd {
			if pos >= len(s) {
				break
			}
			_, n := utf8.DecodeRuneInString(s[pos:])
			pos += n
			continue
		}
		dst = append(dst, span{a, b})
		lastEnd, pos = b, b
		if a == b {
			if pos >= len(s) {
				break
			}
			_, n := utf8.DecodeRuneInString(s[pos:])
			pos += n
		}
	}
	return dst
}
