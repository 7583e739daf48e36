package bpe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The general Split engine: a parser for the subset of Oniguruma's syntax (the regex library inside
// the Rust tokenizers crate) whose meaning this package can reproduce exactly, and a backtracking
// matcher (regex_vm.go) with Oniguruma's leftmost, first-alternative semantics. Anything outside the
// subset is refused at load time with the construct named, never approximated:
//
//   - literals, escapes \t \n \r \f \v \a \e \xHH \x{H…} \uHHHH and escaped punctuation; `.` (any
//     code point but "\n");
//   - classes [...] with ranges, negation, \s \S \p{X} \P{X} inside; X is one of L N M Lu Ll Lt Lm Lo
//     P S, the sets extracted from the oracle (unicode_tables.go); \s is Unicode White_Space;
//   - groups (...) (?:...) (?i:...) (?>...), lookahead (?=...) (?!...);
//   - quantifiers ? * + {n} {n,} {n,m} {,m}, lazy (…?) and possessive (?+ *+ ++).
//
// Refused: anchors, word boundaries, \d \w \h and other shorthand whose Unicode meaning has not been
// extracted, back-references, lookbehind, named groups, inline flags other than i, nested classes and
// class intersection, and case-insensitive matching of anything but ASCII non-letters and the letters
// whose Oniguruma case folds were extracted from the oracle (testdata/unicode/casefold.txt).

// reNode is a node of a parsed pattern.
type reNode struct {
	kind     reKind
	cls      *runeClass // reClass
	subs     []*reNode  // reConcat, reAlt: the parts; reRepeat, reLook, reAtomic: subs[0]
	min, max int        // reRepeat; max -1: unbounded
	lazy     bool       // reRepeat
	poss     bool       // reRepeat: possessive
	neg      bool       // reLook: (?!…)
}

type reKind uint8

const (
	reClass reKind = iota // one code point of a class
	reConcat
	reAlt
	reRepeat
	reLook
	reAtomic
)

// foldSets are the code points Oniguruma's (?i) matches for each letter it was measured on
// (testdata/unicode/casefold.txt, extracted by tools/oracle/classes.js).
var foldSets = map[rune][]rune{
	's': {'S', 's', 0x17F}, 't': {'T', 't'}, 'r': {'R', 'r'}, 'e': {'E', 'e'},
	'v': {'V', 'v'}, 'm': {'M', 'm'}, 'l': {'L', 'l'}, 'd': {'D', 'd'},
}

type reParser struct {
	src  string
	pos  int
	fold bool // inside (?i:…)
}

func parseRegex(pattern string) (*reNode, error) {
	if !utf8.ValidString(pattern) {
		return nil, fmt.Errorf("pattern is not valid UTF-8")
	}
	p := &reParser{src: pattern}
	n, err := p.alt()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.src) {
		return nil, p.errorf("unbalanced ')'")
	}
	return n, nil
}

func (p *reParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *reParser) more() bool { return p.pos < len(p.src) }

func (p *reParser) peek() byte { return p.src[p.pos] }

func (p *reParser) alt() (*reNode, error) {
	var alts []*reNode
	for {
		c, err := p.concat()
		if err != nil {
			return nil, err
		}
		alts = append(alts, c)
		if !p.more() || p.peek() != '|' {
			break
		}
		p.pos++
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &reNode{kind: reAlt, subs: alts}, nil
}

func (p *reParser) concat() (*reNode, error) {
	var parts []*reNode
	for p.more() && p.peek() != '|' && p.peek() != ')' {
		atom, err := p.atom()
		if err != nil {
			return nil, err
		}
		if atom, err = p.quantified(atom); err != nil {
			return nil, err
		}
		parts = append(parts, atom)
	}
	if p.fold {
		if err := checkMultiFold(parts); err != nil {
			return nil, p.errorf("%v", err)
		}
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return &reNode{kind: reConcat, subs: parts}, nil
}

// checkMultiFold refuses, under (?i), adjacent literals that a single code point folds to ("ss" is
// ß, "st" is ﬆ): Oniguruma matches those multi-character folds and this engine does not.
func checkMultiFold(parts []*reNode) error {
	for i := 0; i+1 < len(parts); i++ {
		a, b := parts[i].cls, parts[i+1].cls
		if a == nil || b == nil || a.foldOf == 0 || b.foldOf == 0 {
			continue
		}
		if a.foldOf == 's' && (b.foldOf == 's' || b.foldOf == 't') {
			return fmt.Errorf("case-insensitive %q (a multi-character case fold)", string([]rune{a.foldOf, b.foldOf}))
		}
	}
	return nil
}

func (p *reParser) atom() (*reNode, error) {
	c := p.peek()
	switch c {
	case '(':
		return p.group()
	case '[':
		cls, err := p.class()
		if err != nil {
			return nil, err
		}
		if p.fold && !cls.foldSafe() {
			return nil, p.errorf("a class inside (?i) (its case folds were not extracted)")
		}
		return &reNode{kind: reClass, cls: cls}, nil
	case '.':
		p.pos++
		cls := &runeClass{neg: true, items: []classItem{{lo: '\n', hi: '\n'}}}
		cls.finish()
		return &reNode{kind: reClass, cls: cls}, nil
	case '^', '$':
		return nil, p.errorf("anchor %q", c)
	case '*', '+', '?':
		return nil, p.errorf("quantifier %q without an operand", c)
	case '{':
		return nil, p.errorf("unescaped '{'")
	case '\\':
		item, err := p.escape(false)
		if err != nil {
			return nil, err
		}
		return p.literalNode(item)
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return p.literalNode(classItem{lo: r, hi: r})
}

// literalNode makes a one-code-point node of item, applying (?i) to a literal.
func (p *reParser) literalNode(item classItem) (*reNode, error) {
	cls := &runeClass{items: []classItem{item}}
	if p.fold {
		if item.kind != itemRange || item.lo != item.hi {
			if !cls.foldSafe() {
				return nil, p.errorf("a class escape inside (?i)")
			}
		} else if r := item.lo; r >= utf8.RuneSelf || isASCIILetter(r) {
			set, ok := foldSets[toLowerASCII(r)]
			if !ok {
				return nil, p.errorf("case-insensitive %q (its Oniguruma case folds were not extracted)", r)
			}
			cls.items = cls.items[:0]
			for _, f := range set {
				cls.items = append(cls.items, classItem{lo: f, hi: f})
			}
			cls.foldOf = toLowerASCII(r)
		}
	}
	cls.finish()
	return &reNode{kind: reClass, cls: cls}, nil
}

func isASCIILetter(r rune) bool { return r|0x20 >= 'a' && r|0x20 <= 'z' }

func toLowerASCII(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 0x20
	}
	return r
}

func (p *reParser) group() (*reNode, error) {
	p.pos++ // (
	kind, fold := reConcat, p.fold
	neg := false
	if strings.HasPrefix(p.src[p.pos:], "?") {
		rest := p.src[p.pos+1:]
		switch {
		case strings.HasPrefix(rest, ":"):
			p.pos += 2
		case strings.HasPrefix(rest, "i:"):
			p.pos += 3
			fold = true
		case strings.HasPrefix(rest, "="):
			p.pos += 2
			kind = reLook
		case strings.HasPrefix(rest, "!"):
			p.pos += 2
			kind, neg = reLook, true
		case strings.HasPrefix(rest, ">"):
			p.pos += 2
			kind = reAtomic
		case strings.HasPrefix(rest, "<=") || strings.HasPrefix(rest, "<!"):
			return nil, p.errorf("lookbehind (?%s…)", rest[:2])
		default:
			end := min(len(rest), 3)
			return nil, p.errorf("group construct (?%s", rest[:end])
		}
	}
	saved := p.fold
	p.fold = fold
	inner, err := p.alt()
	p.fold = saved
	if err != nil {
		return nil, err
	}
	if !p.more() || p.peek() != ')' {
		return nil, p.errorf("missing ')'")
	}
	p.pos++
	switch kind {
	case reLook, reAtomic:
		return &reNode{kind: kind, subs: []*reNode{inner}, neg: neg}, nil
	}
	return inner, nil
}

// quantified applies the quantifiers that follow an atom.
func (p *reParser) quantified(atom *reNode) (*reNode, error) {
	for p.more() {
		lo, hi := 0, -1
		interval := false
		switch p.peek() {
		case '?':
			hi = 1
		case '*':
		case '+':
			lo = 1
		case '{':
			var ok bool
			if lo, hi, ok = p.interval(); !ok {
				return nil, p.errorf("unescaped '{' that is not an interval")
			}
			interval = true
		default:
			return atom, nil
		}
		if !interval {
			p.pos++
		}
		if atom.kind == reLook {
			return nil, p.errorf("quantified lookahead")
		}
		if atom.kind == reRepeat {
			return nil, p.errorf("nested quantifier")
		}
		n := &reNode{kind: reRepeat, subs: []*reNode{atom}, min: lo, max: hi}
		if p.more() && p.peek() == '?' {
			n.lazy = true
			p.pos++
		} else if p.more() && p.peek() == '+' {
			if interval {
				return nil, p.errorf("'+' after an interval")
			}
			n.poss = true
			p.pos++
		}
		if hi < 0 && nullable(atom) {
			return nil, p.errorf("unbounded repetition of an expression that can match empty")
		}
		atom = n
	}
	return atom, nil
}

// interval parses {n}, {n,}, {n,m} or {,m} at p.pos.
func (p *reParser) interval() (int, int, bool) {
	end := strings.IndexByte(p.src[p.pos:], '}')
	if end < 0 {
		return 0, 0, false
	}
	body := p.src[p.pos+1 : p.pos+end]
	a, b, comma := strings.Cut(body, ",")
	num := func(s string) (int, bool) {
		if s == "" || len(s) > 4 {
			return 0, false
		}
		v, err := strconv.Atoi(s)
		return v, err == nil && v >= 0
	}
	var lo, hi int
	var ok bool
	switch {
	case !comma:
		lo, ok = num(a)
		hi = lo
	case a == "":
		lo = 0
		hi, ok = num(b)
	case b == "":
		lo, ok = num(a)
		hi = -1
	default:
		lo, ok = num(a)
		if ok {
			hi, ok = num(b)
		}
	}
	if !ok || (hi >= 0 && hi < lo) || lo > 1000 || hi > 1000 {
		return 0, 0, false
	}
	p.pos += end + 1
	return lo, hi, true
}

func nullable(n *reNode) bool {
	switch n.kind {
	case reClass:
		return false
	case reConcat:
		for _, s := range n.subs {
			if !nullable(s) {
				return false
			}
		}
		return true
	case reAlt:
		for _, s := range n.subs {
			if nullable(s) {
				return true
			}
		}
		return false
	case reRepeat:
		return n.min == 0 || nullable(n.subs[0])
	case reLook:
		return true
	}
	return nullable(n.subs[0]) // reAtomic
}

// class parses [...] at p.pos.
func (p *reParser) class() (*runeClass, error) {
	p.pos++ // [
	cls := &runeClass{}
	if p.more() && p.peek() == '^' {
		cls.neg = true
		p.pos++
	}
	if p.more() && p.peek() == ']' {
		return nil, p.errorf("']' first in a class")
	}
	for {
		if !p.more() {
			return nil, p.errorf("missing ']'")
		}
		c := p.peek()
		if c == ']' {
			p.pos++
			break
		}
		if c == '[' {
			return nil, p.errorf("nested class")
		}
		if strings.HasPrefix(p.src[p.pos:], "&&") {
			return nil, p.errorf("class intersection")
		}
		var item classItem
		if c == '\\' {
			var err error
			if item, err = p.escape(true); err != nil {
				return nil, err
			}
		} else {
			r, n := utf8.DecodeRuneInString(p.src[p.pos:])
			p.pos += n
			item = classItem{lo: r, hi: r}
		}
		// A range a-b (a '-' before ']' is literal).
		if item.kind == itemRange && strings.HasPrefix(p.src[p.pos:], "-") && !strings.HasPrefix(p.src[p.pos:], "-]") {
			p.pos++
			if !p.more() {
				return nil, p.errorf("missing ']'")
			}
			var hi classItem
			if p.peek() == '\\' {
				var err error
				if hi, err = p.escape(true); err != nil {
					return nil, err
				}
			} else if p.peek() == '[' {
				return nil, p.errorf("nested class")
			} else {
				r, n := utf8.DecodeRuneInString(p.src[p.pos:])
				p.pos += n
				hi = classItem{lo: r, hi: r}
			}
			if hi.kind != itemRange || hi.lo < item.lo {
				return nil, p.errorf("bad class range")
			}
			item.hi = hi.lo
		}
		cls.items = append(cls.items, item)
	}
	cls.finish()
	return cls, nil
}

// escape parses a backslash escape at p.pos: a literal code point or a class item.
func (p *reParser) escape(inClass bool) (classItem, error) {
	p.pos++ // backslash
	if !p.more() {
		return classItem{}, p.errorf("trailing backslash")
	}
	c := p.peek()
	p.pos++
	lit := func(r rune) (classItem, error) { return classItem{lo: r, hi: r}, nil }
	switch c {
	case 't':
		return lit('\t')
	case 'n':
		return lit('\n')
	case 'r':
		return lit('\r')
	case 'f':
		return lit('\f')
	case 'v':
		return lit('\v')
	case 'a':
		return lit(0x07)
	case 'e':
		return lit(0x1B)
	case 's':
		return classItem{kind: itemProps, props: propSpace}, nil
	case 'S':
		return classItem{kind: itemProps, props: propSpace, neg: true}, nil
	case 'p', 'P':
		return p.property(c == 'P')
	case 'x':
		if p.more() && p.peek() == '{' {
			end := strings.IndexByte(p.src[p.pos:], '}')
			if end < 0 {
				return classItem{}, p.errorf("bad \\x{…}")
			}
			return p.hexLiteral(p.src[p.pos+1:p.pos+end], end+1)
		}
		if len(p.src)-p.pos < 2 {
			return classItem{}, p.errorf("bad \\x")
		}
		return p.hexLiteral(p.src[p.pos:p.pos+2], 2)
	case 'u':
		if len(p.src)-p.pos < 4 {
			return classItem{}, p.errorf("bad \\u")
		}
		return p.hexLiteral(p.src[p.pos:p.pos+4], 4)
	}
	if c < utf8.RuneSelf && !isASCIILetter(rune(c)) && (c < '0' || c > '9') {
		return lit(rune(c)) // escaped punctuation or space
	}
	return classItem{}, p.errorf("escape \\%c", c)
}

func (p *reParser) hexLiteral(digits string, width int) (classItem, error) {
	v, err := strconv.ParseUint(digits, 16, 32)
	if err != nil || v > utf8.MaxRune || (v >= 0xD800 && v <= 0xDFFF) || digits == "" {
		return classItem{}, p.errorf("bad hex escape %q", digits)
	}
	p.pos += width
	return classItem{lo: rune(v), hi: rune(v)}, nil
}

// property parses the {X} of \p{X} or \P{X}.
func (p *reParser) property(neg bool) (classItem, error) {
	if !p.more() || p.peek() != '{' {
		return classItem{}, p.errorf("\\p without {…}")
	}
	end := strings.IndexByte(p.src[p.pos:], '}')
	if end < 0 {
		return classItem{}, p.errorf("missing '}' of \\p{…}")
	}
	name := p.src[p.pos+1 : p.pos+end]
	item := classItem{kind: itemProps, neg: neg}
	switch name {
	case "L":
		item.props = propL
	case "N":
		item.props = propN
	case "M":
		item.props = propM
	case "Lu":
		item.props = propLu
	case "Ll":
		item.props = propLl
	case "Lt":
		item.props = propLt
	case "Lm":
		item.props = propLm
	case "Lo":
		item.props = propLo
	case "P":
		item.xprops = xpropP
	case "S":
		item.xprops = xpropS
	default:
		return classItem{}, p.errorf("property \\p{%s} (not extracted from the oracle)", name)
	}
	p.pos += end + 1
	return item, nil
}

// runeClass is a set of code points: the union of its items, complemented if neg.
type runeClass struct {
	neg    bool
	items  []classItem
	ascii  [2]uint64 // membership of U+0000..U+007F, after neg
	foldOf rune      // a (?i) literal: the lower-case letter it stands for, else 0
}

type itemKind uint8

const (
	itemRange itemKind = iota // lo..hi
	itemProps                 // code points with any of props/xprops (complemented if neg)
)

type classItem struct {
	kind   itemKind
	lo, hi rune
	props  uint16
	xprops uint8
	neg    bool
}

func (c *runeClass) finish() {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		if c.slowHas(r) {
			c.ascii[r>>6] |= 1 << (r & 63)
		}
	}
}

// foldSafe reports whether the class contains no code point with a case fold that (?i) would add:
// only ASCII non-letters are known to have none.
func (c *runeClass) foldSafe() bool {
	if c.neg {
		return false
	}
	for _, it := range c.items {
		if it.kind != itemRange || it.hi >= utf8.RuneSelf {
			return false
		}
		for r := it.lo; r <= it.hi; r++ {
			if isASCIILetter(r) {
				return false
			}
		}
	}
	return true
}

func (c *runeClass) has(r rune) bool {
	if uint32(r) < utf8.RuneSelf {
		return c.ascii[r>>6]&(1<<(r&63)) != 0
	}
	return c.slowHas(r)
}

func (c *runeClass) slowHas(r rune) bool {
	in := false
	for _, it := range c.items {
		var m bool
		if it.kind == itemRange {
			m = r >= it.lo && r <= it.hi
		} else {
			m = (it.props != 0 && propsOf(r)&it.props != 0) || (it.xprops != 0 && xpropsOf(r)&it.xprops != 0)
			m = m != it.neg
		}
		if m {
			in = true
			break
		}
	}
	return in != c.neg
}
