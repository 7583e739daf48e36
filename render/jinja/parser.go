package jinja

import (
	"math/big"
	"strconv"
	"strings"
)

// maxDepth bounds expression and block nesting so that hostile templates
// cannot exhaust the Go stack (CPython would raise RecursionError).
const maxDepth = 200

type parser struct {
	name  string
	toks  []token
	i     int
	depth int
	// loops counts the for bodies enclosing the current position within
	// the current macro (break and continue need one).
	loops int
}

func (p *parser) cur() token { return p.toks[p.i] }

func (p *parser) look() token {
	if p.i+1 < len(p.toks) {
		return p.toks[p.i+1]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) fail(t token, format string, args ...any) error {
	return newError(KindSyntax, p.name, t.line, format, args...)
}

func (p *parser) isOp(op string) bool {
	t := p.cur()
	return t.typ == tokOp && t.val == op
}

func (p *parser) isName(name string) bool {
	t := p.cur()
	return t.typ == tokName && t.val == name
}

func (p *parser) skipOp(op string) bool {
	if p.isOp(op) {
		p.next()
		return true
	}
	return false
}

func (p *parser) skipName(name string) bool {
	if p.isName(name) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(op string) error {
	if !p.skipOp(op) {
		t := p.cur()
		if t.typ == tokEOF {
			return p.fail(t, "unexpected end of template, expected '%s'.", op)
		}
		return p.fail(t, "expected token '%s', got '%s'", op, t.describe())
	}
	return nil
}

func (p *parser) expectType(typ tokenType) (token, error) {
	t := p.cur()
	if t.typ != typ {
		if t.typ == tokEOF {
			return t, p.fail(t, "unexpected end of template, expected '%s'.", typ)
		}
		return t, p.fail(t, "expected token '%s', got '%s'", typ, t.describe())
	}
	return p.next(), nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.fail(p.cur(), "template nested too deeply")
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// parseBody parses statements until a block tag whose name is in ends
// and returns with the parser on that name (inside the block).
func (p *parser) parseBody(ends ...string) ([]node, string, error) {
	if err := p.enter(); err != nil {
		return nil, "", err
	}
	defer p.leave()
	var body []node
	for {
		t := p.cur()
		switch t.typ {
		case tokData:
			p.next()
			body = append(body, &textNode{stmtBase{t.span}, t.val})
		case tokVarBegin:
			p.next()
			x, err := p.parseTuple(false, true, nil, false)
			if err != nil {
				return nil, "", err
			}
			if _, err := p.expectType(tokVarEnd); err != nil {
				return nil, "", err
			}
			body = append(body, &outputNode{stmtBase{t.span}, x, isConstant(x)})
		case tokBlockBegin:
			p.next()
			nt := p.cur()
			if nt.typ == tokName {
				for _, e := range ends {
					if nt.val == e {
						return body, e, nil
					}
				}
			}
			n, err := p.parseStatement()
			if err != nil {
				return nil, "", err
			}
			if n != nil {
				body = append(body, n)
			}
		case tokEOF:
			if len(ends) > 0 {
				return nil, "", p.fail(t, "Unexpected end of template. Jinja was looking for the following tags: %s.", quoteTags(ends))
			}
			return body, "", nil
		default:
			return nil, "", p.fail(t, "unexpected '%s'", t.describe())
		}
	}
}

func quoteTags(ends []string) string {
	q := make([]string, len(ends))
	for i, e := range ends {
		q[i] = "'" + e + "'"
	}
	return strings.Join(q, " or ")
}

// endBlock consumes the end tag name and the block end.
func (p *parser) endBlock() error {
	p.next()
	_, err := p.expectType(tokBlockEnd)
	return err
}

func (p *parser) parseStatement() (node, error) {
	t := p.cur()
	if t.typ != tokName {
		return nil, p.fail(t, "tag name expected")
	}
	sp := stmtBase{t.span}
	switch t.val {
	case "for":
		return p.parseFor(sp)
	case "if":
		return p.parseIf(sp)
	case "set":
		return p.parseSet(sp)
	case "macro":
		return p.parseMacro(sp)
	case "call":
		return p.parseCallBlock(sp)
	case "filter":
		return p.parseFilterBlock(sp)
	case "with":
		return p.parseWith(sp)
	case "print":
		p.next()
		x, err := p.parseTuple(false, true, nil, false)
		if err != nil {
			return nil, err
		}
		_, err = p.expectType(tokBlockEnd)
		return &outputNode{sp, x, isConstant(x)}, err
	case "break", "continue":
		if p.loops == 0 {
			return nil, p.fail(t, "'%s' outside loop", t.val)
		}
		p.next()
		_, err := p.expectType(tokBlockEnd)
		return &loopControlNode{sp, t.val == "break"}, err
	case "generation":
		p.next()
		if _, err := p.expectType(tokBlockEnd); err != nil {
			return nil, err
		}
		body, _, err := p.parseBody("endgeneration")
		if err != nil {
			return nil, err
		}
		return &generationNode{sp, body}, p.endBlock()
	case "include", "import", "from", "extends":
		// Jinja2 parses these and fails when they run, since transformers'
		// environment has no loader.
		for p.cur().typ != tokBlockEnd && p.cur().typ != tokEOF {
			p.next()
		}
		if _, err := p.expectType(tokBlockEnd); err != nil {
			return nil, err
		}
		return &errorNode{sp, KindType, "no loader for this environment specified"}, nil
	case "block":
		p.next()
		if _, err := p.expectType(tokName); err != nil {
			return nil, err
		}
		p.skipName("scoped")
		p.skipName("required")
		if _, err := p.expectType(tokBlockEnd); err != nil {
			return nil, err
		}
		body, _, err := p.parseBody("endblock")
		if err != nil {
			return nil, err
		}
		p.next()
		if p.cur().typ == tokName {
			p.next()
		}
		_, err = p.expectType(tokBlockEnd)
		return &generationNode{sp, body}, err
	}
	return nil, p.fail(t, "Encountered unknown tag '%s'.", t.val)
}

func (p *parser) parseFor(sp stmtBase) (node, error) {
	p.next()
	target, err := p.parseAssignTarget(true, false, []string{"in"})
	if err != nil {
		return nil, err
	}
	if !p.skipName("in") {
		return nil, p.fail(p.cur(), "expected token 'in', got '%s'", p.cur().describe())
	}
	iter, err := p.parseTuple(false, false, []string{"recursive"}, false)
	if err != nil {
		return nil, err
	}
	n := &forNode{stmtBase: sp, target: target, iter: iter}
	if p.skipName("if") {
		if n.cond, err = p.parseExpression(true); err != nil {
			return nil, err
		}
	}
	n.recursive = p.skipName("recursive")
	if _, err := p.expectType(tokBlockEnd); err != nil {
		return nil, err
	}
	p.loops++
	body, end, err := p.parseBody("endfor", "else")
	p.loops--
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		if err := p.endBlock(); err != nil {
			return nil, err
		}
		if n.els, _, err = p.parseBody("endfor"); err != nil {
			return nil, err
		}
	}
	return n, p.endBlock()
}

func (p *parser) parseIf(sp stmtBase) (node, error) {
	p.next()
	n := &ifNode{stmtBase: sp}
	for {
		test, err := p.parseTuple(false, false, nil, false)
		if err != nil {
			return nil, err
		}
		if _, err := p.expectType(tokBlockEnd); err != nil {
			return nil, err
		}
		body, end, err := p.parseBody("elif", "else", "endif")
		if err != nil {
			return nil, err
		}
		n.tests = append(n.tests, test)
		n.bodies = append(n.bodies, body)
		switch end {
		case "elif":
			p.next()
			continue
		case "else":
			if err := p.endBlock(); err != nil {
				return nil, err
			}
			if n.els, _, err = p.parseBody("endif"); err != nil {
				return nil, err
			}
		}
		return n, p.endBlock()
	}
}

func (p *parser) parseSet(sp stmtBase) (node, error) {
	p.next()
	target, err := p.parseAssignTarget(true, true, nil)
	if err != nil {
		return nil, err
	}
	if p.skipOp("=") {
		v, err := p.parseTuple(false, true, nil, false)
		if err != nil {
			return nil, err
		}
		_, err = p.expectType(tokBlockEnd)
		return &setNode{sp, target, v}, err
	}
	n := &setBlockNode{stmtBase: sp, target: target}
	if p.isOp("|") {
		if n.filters, err = p.parseFilterChain(false); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectType(tokBlockEnd); err != nil {
		return nil, err
	}
	if n.body, _, err = p.parseBody("endset"); err != nil {
		return nil, err
	}
	return n, p.endBlock()
}

func (p *parser) parseWith(sp stmtBase) (node, error) {
	p.next()
	n := &withNode{stmtBase: sp}
	for p.cur().typ != tokBlockEnd {
		if len(n.targets) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		target, err := p.parseAssignTarget(true, false, nil)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		n.targets = append(n.targets, target)
		n.values = append(n.values, v)
	}
	p.next()
	var err error
	if n.body, _, err = p.parseBody("endwith"); err != nil {
		return nil, err
	}
	return n, p.endBlock()
}

func (p *parser) parseSignature(m *macroDef) error {
	if err := p.expectOp("("); err != nil {
		return err
	}
	for !p.isOp(")") {
		if len(m.params) > 0 {
			if err := p.expectOp(","); err != nil {
				return err
			}
		}
		t, err := p.expectType(tokName)
		if err != nil {
			return err
		}
		if isReservedName(t.val) {
			return p.fail(t, "can't assign to '%s'", t.val)
		}
		m.params = append(m.params, t.val)
		if p.skipOp("=") {
			d, err := p.parseExpression(true)
			if err != nil {
				return err
			}
			m.defaults = append(m.defaults, d)
		} else if len(m.defaults) > 0 {
			return p.fail(t, "non-default argument follows default argument")
		}
	}
	p.next()
	return nil
}

func isReservedName(s string) bool {
	switch s {
	case "true", "false", "none", "True", "False", "None":
		return true
	}
	return false
}

func (p *parser) parseMacro(sp stmtBase) (node, error) {
	p.next()
	t, err := p.expectType(tokName)
	if err != nil {
		return nil, err
	}
	m := &macroDef{name: t.val}
	if err := p.parseSignature(m); err != nil {
		return nil, err
	}
	if _, err := p.expectType(tokBlockEnd); err != nil {
		return nil, err
	}
	saved := p.loops
	p.loops = 0
	m.body, _, err = p.parseBody("endmacro")
	p.loops = saved
	if err != nil {
		return nil, err
	}
	markMacro(m)
	return &macroNode{sp, t.val, m}, p.endBlock()
}

func (p *parser) parseCallBlock(sp stmtBase) (node, error) {
	p.next()
	m := &macroDef{name: "caller"}
	if p.isOp("(") {
		if err := p.parseSignature(m); err != nil {
			return nil, err
		}
	}
	x, err := p.parseExpression(true)
	if err != nil {
		return nil, err
	}
	call, ok := x.(*callExpr)
	if !ok {
		return nil, p.fail(p.cur(), "expected call")
	}
	if _, err := p.expectType(tokBlockEnd); err != nil {
		return nil, err
	}
	saved := p.loops
	p.loops = 0
	m.body, _, err = p.parseBody("endcall")
	p.loops = saved
	if err != nil {
		return nil, err
	}
	markMacro(m)
	return &callBlockNode{sp, call, m}, p.endBlock()
}

func (p *parser) parseFilterBlock(sp stmtBase) (node, error) {
	p.next()
	filters, err := p.parseFilterChain(true)
	if err != nil {
		return nil, err
	}
	if _, err := p.expectType(tokBlockEnd); err != nil {
		return nil, err
	}
	body, _, err := p.parseBody("endfilter")
	if err != nil {
		return nil, err
	}
	return &filterBlockNode{sp, filters, body}, p.endBlock()
}

// parseAssignTarget parses a name, a tuple of names, or (withNamespace)
// name.attr.
func (p *parser) parseAssignTarget(withTuple, withNamespace bool, extraEnd []string) (expr, error) {
	t := p.cur()
	if withNamespace && t.typ == tokName && p.look().typ == tokOp && p.look().val == "." {
		p.next()
		p.next()
		attr, err := p.expectType(tokName)
		if err != nil {
			return nil, err
		}
		return &nsRefExpr{exprBase{t.span}, t.val, attr.val}, nil
	}
	var x expr
	var err error
	if withTuple {
		x, err = p.parseTuple(true, true, extraEnd, false)
	} else {
		x, err = p.parsePrimary()
	}
	if err != nil {
		return nil, err
	}
	if !canAssign(x) {
		return nil, p.fail(t, "can't assign to '%s'", exprTypeName(x))
	}
	return x, nil
}

func canAssign(x expr) bool {
	switch x := x.(type) {
	case *nameExpr:
		return !isReservedName(x.name)
	case *tupleExpr:
		for _, it := range x.items {
			if !canAssign(it) {
				return false
			}
		}
		return true
	}
	return false
}

func exprTypeName(x expr) string {
	switch x.(type) {
	case *constExpr:
		return "Const"
	case *tupleExpr:
		return "Tuple"
	case *listExpr:
		return "List"
	case *dictExpr:
		return "Dict"
	case *attrExpr:
		return "Getattr"
	case *itemExpr:
		return "Getitem"
	case *callExpr:
		return "Call"
	}
	return "expression"
}

func (p *parser) isTupleEnd(extraEnd []string) bool {
	t := p.cur()
	switch t.typ {
	case tokVarEnd, tokBlockEnd, tokEOF:
		return true
	case tokOp:
		return t.val == ")"
	case tokName:
		for _, e := range extraEnd {
			if t.val == e {
				return true
			}
		}
	}
	return false
}

func (p *parser) parseTuple(simplified, withCond bool, extraEnd []string, explicitParens bool) (expr, error) {
	start := p.cur()
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		if p.isTupleEnd(extraEnd) {
			break
		}
		var x expr
		var err error
		if simplified {
			x, err = p.parsePrimary()
		} else {
			x, err = p.parseExpression(withCond)
		}
		if err != nil {
			return nil, err
		}
		items = append(items, x)
		if p.isOp(",") {
			isTuple = true
		} else {
			break
		}
	}
	if !isTuple {
		if len(items) > 0 {
			return items[0], nil
		}
		if !explicitParens {
			return nil, p.fail(p.cur(), "Expected an expression, got '%s'", p.cur().describe())
		}
	}
	return &tupleExpr{exprBase{start.span}, items}, nil
}

func (p *parser) parseExpression(withCond bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	if withCond {
		return p.parseCondExpr()
	}
	return p.parseOr()
}

func (p *parser) parseCondExpr() (expr, error) {
	start := p.cur()
	x, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.skipName("if") {
		test, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		var no expr
		if p.skipName("else") {
			if no, err = p.parseExpression(true); err != nil {
				return nil, err
			}
		}
		x = &condExpr{exprBase{start.span}, test, x, no}
	}
	return x, nil
}

func (p *parser) parseOr() (expr, error) {
	start := p.cur()
	x, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.skipName("or") {
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		x = &binaryExpr{exprBase{start.span}, "or", x, r}
	}
	return x, nil
}

func (p *parser) parseAnd() (expr, error) {
	start := p.cur()
	x, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.skipName("and") {
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		x = &binaryExpr{exprBase{start.span}, "and", x, r}
	}
	return x, nil
}

func (p *parser) parseNot() (expr, error) {
	start := p.cur()
	if p.skipName("not") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{exprBase{start.span}, "not", x}, nil
	}
	return p.parseCompare()
}

func (p *parser) parseCompare() (expr, error) {
	start := p.cur()
	x, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	var ops []string
	var rest []expr
	for {
		t := p.cur()
		var op string
		switch {
		case t.typ == tokOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == "<=" || t.val == ">" || t.val == ">="):
			p.next()
			op = t.val
		case p.isName("in"):
			p.next()
			op = "in"
		case p.isName("not") && p.look().typ == tokName && p.look().val == "in":
			p.next()
			p.next()
			op = "notin"
		}
		if op == "" {
			break
		}
		r, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
		rest = append(rest, r)
	}
	if len(ops) == 0 {
		return x, nil
	}
	return &compareExpr{exprBase{start.span}, x, ops, rest}, nil
}

func (p *parser) parseMath1() (expr, error) {
	start := p.cur()
	x, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.next().val
		r, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		x = &binaryExpr{exprBase{start.span}, op, x, r}
	}
	return x, nil
}

func (p *parser) parseConcat() (expr, error) {
	start := p.cur()
	x, err := p.parseMath2()
	if err != nil {
		return nil, err
	}
	if !p.isOp("~") {
		return x, nil
	}
	items := []expr{x}
	for p.skipOp("~") {
		r, err := p.parseMath2()
		if err != nil {
			return nil, err
		}
		items = append(items, r)
	}
	return &concatExpr{exprBase{start.span}, items}, nil
}

func (p *parser) parseMath2() (expr, error) {
	start := p.cur()
	x, err := p.parsePow()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		op := p.next().val
		r, err := p.parsePow()
		if err != nil {
			return nil, err
		}
		x = &binaryExpr{exprBase{start.span}, op, x, r}
	}
	return x, nil
}

func (p *parser) parsePow() (expr, error) {
	start := p.cur()
	x, err := p.parseUnary(true)
	if err != nil {
		return nil, err
	}
	for p.skipOp("**") {
		r, err := p.parseUnary(true)
		if err != nil {
			return nil, err
		}
		x = &binaryExpr{exprBase{start.span}, "**", x, r}
	}
	return x, nil
}

func (p *parser) parseUnary(withFilter bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	start := p.cur()
	var x expr
	var err error
	if p.isOp("-") || p.isOp("+") {
		op := p.next().val
		inner, err := p.parseUnary(false)
		if err != nil {
			return nil, err
		}
		x = &unaryExpr{exprBase{start.span}, op, inner}
	} else {
		if x, err = p.parsePrimary(); err != nil {
			return nil, err
		}
	}
	if x, err = p.parsePostfix(x); err != nil {
		return nil, err
	}
	if withFilter {
		return p.parseFilterExpr(x)
	}
	return x, nil
}

func (p *parser) parsePrimary() (expr, error) {
	t := p.cur()
	eb := exprBase{t.span}
	switch t.typ {
	case tokName:
		p.next()
		switch t.val {
		case "true", "True":
			return &constExpr{eb, Bool(true)}, nil
		case "false", "False":
			return &constExpr{eb, Bool(false)}, nil
		case "none", "None":
			return &constExpr{eb, None()}, nil
		}
		return &nameExpr{eb, t.val}, nil
	case tokString:
		p.next()
		s := t.val
		for p.cur().typ == tokString {
			s += p.next().val
		}
		return &constExpr{eb, String(s)}, nil
	case tokInt:
		p.next()
		return &constExpr{eb, parseIntLiteral(t.val)}, nil
	case tokFloat:
		p.next()
		f, _ := strconv.ParseFloat(strings.ReplaceAll(t.val, "_", ""), 64)
		return &constExpr{eb, Float(f)}, nil
	case tokOp:
		switch t.val {
		case "(":
			p.next()
			x, err := p.parseTuple(false, true, nil, true)
			if err != nil {
				return nil, err
			}
			return x, p.expectOp(")")
		case "[":
			p.next()
			var items []expr
			for !p.isOp("]") {
				if len(items) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.isOp("]") {
						break
					}
				}
				x, err := p.parseExpression(true)
				if err != nil {
					return nil, err
				}
				items = append(items, x)
			}
			p.next()
			return &listExpr{eb, items}, nil
		case "{":
			p.next()
			d := &dictExpr{exprBase: eb}
			for !p.isOp("}") {
				if len(d.keys) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.isOp("}") {
						break
					}
				}
				k, err := p.parseExpression(true)
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(":"); err != nil {
					return nil, err
				}
				v, err := p.parseExpression(true)
				if err != nil {
					return nil, err
				}
				d.keys = append(d.keys, k)
				d.values = append(d.values, v)
			}
			p.next()
			return d, nil
		}
	case tokEOF:
		return nil, p.fail(t, "unexpected end of template")
	}
	return nil, p.fail(t, "unexpected '%s'", t.describe())
}

func parseIntLiteral(s string) Value {
	s = strings.ReplaceAll(s, "_", "")
	base := 10
	if len(s) > 2 && s[0] == '0' {
		switch s[1] | 0x20 {
		case 'b':
			base = 2
		case 'o':
			base = 8
		case 'x':
			base = 16
		}
		if base != 10 {
			s = s[2:]
		}
	}
	if i, err := strconv.ParseInt(s, base, 64); err == nil {
		return Int(i)
	}
	b, _ := new(big.Int).SetString(s, base)
	return bigValue(b)
}

func (p *parser) parsePostfix(x expr) (expr, error) {
	for {
		t := p.cur()
		if t.typ != tokOp {
			return x, nil
		}
		var err error
		switch t.val {
		case ".", "[":
			x, err = p.parseSubscript(x)
		case "(":
			x, err = p.parseCall(x)
		default:
			return x, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseFilterExpr(x expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp("|"):
			var fs []*filterExpr
			fs, err = p.parseFilterChain(false)
			if err == nil {
				for _, f := range fs {
					f.x = x
					x = f
				}
			}
		case p.isName("is"):
			x, err = p.parseTest(x)
		case p.isOp("("):
			x, err = p.parseCall(x)
		default:
			return x, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseSubscript(x expr) (expr, error) {
	t := p.next()
	eb := exprBase{t.span}
	if t.val == "." {
		a := p.cur()
		switch a.typ {
		case tokName:
			p.next()
			return &attrExpr{eb, x, a.val}, nil
		case tokInt:
			p.next()
			return &itemExpr{eb, x, &constExpr{exprBase{a.span}, parseIntLiteral(a.val)}}, nil
		}
		return nil, p.fail(a, "expected name or number")
	}
	var args []expr
	for !p.isOp("]") {
		if len(args) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		a, err := p.parseSubscribed()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
	}
	p.next()
	if len(args) == 1 {
		return &itemExpr{eb, x, args[0]}, nil
	}
	return &itemExpr{eb, x, &tupleExpr{eb, args}}, nil
}

func (p *parser) parseSubscribed() (expr, error) {
	start := p.cur()
	var parts []expr
	if p.isOp(":") {
		p.next()
		parts = []expr{nil}
	} else {
		x, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		if !p.isOp(":") {
			return x, nil
		}
		p.next()
		parts = []expr{x}
	}
	endOfPart := func() bool { return p.isOp("]") || p.isOp(",") }
	if p.isOp(":") {
		parts = append(parts, nil)
	} else if !endOfPart() {
		x, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		parts = append(parts, x)
	} else {
		parts = append(parts, nil)
	}
	if p.skipOp(":") {
		if !endOfPart() {
			x, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			parts = append(parts, x)
		} else {
			parts = append(parts, nil)
		}
	} else {
		parts = append(parts, nil)
	}
	return &sliceExpr{exprBase{start.span}, parts[0], parts[1], parts[2]}, nil
}

func (p *parser) parseCallArgs() (callArgs, error) {
	var c callArgs
	open := p.next()
	requireComma := false
	bad := func() error { return p.fail(open, "invalid syntax for function call expression") }
	for !p.isOp(")") {
		if requireComma {
			if err := p.expectOp(","); err != nil {
				return c, err
			}
			if p.isOp(")") {
				break
			}
		}
		switch {
		case p.isOp("*"):
			if c.dynArgs != nil || c.dynKw != nil {
				return c, bad()
			}
			p.next()
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.dynArgs = x
		case p.isOp("**"):
			if c.dynKw != nil {
				return c, bad()
			}
			p.next()
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.dynKw = x
		case p.cur().typ == tokName && p.look().typ == tokOp && p.look().val == "=":
			if c.dynArgs != nil || c.dynKw != nil {
				return c, bad()
			}
			key := p.next().val
			p.next()
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.kwNames = append(c.kwNames, key)
			c.kwVals = append(c.kwVals, x)
		default:
			if c.dynArgs != nil || c.dynKw != nil || len(c.kwNames) > 0 {
				return c, bad()
			}
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.args = append(c.args, x)
		}
		requireComma = true
	}
	p.next()
	return c, nil
}

func (p *parser) parseCall(x expr) (expr, error) {
	t := p.cur()
	c, err := p.parseCallArgs()
	if err != nil {
		return nil, err
	}
	return &callExpr{exprBase{t.span}, x, c}, nil
}

func (p *parser) dottedName() (string, error) {
	t, err := p.expectType(tokName)
	if err != nil {
		return "", err
	}
	name := t.val
	for p.skipOp(".") {
		t, err := p.expectType(tokName)
		if err != nil {
			return "", err
		}
		name += "." + t.val
	}
	return name, nil
}

// parseFilterChain parses "| f(args) | g" (or, inline, "f(args) | g")
// and returns the filters in application order with x unset.
func (p *parser) parseFilterChain(inline bool) ([]*filterExpr, error) {
	var fs []*filterExpr
	for inline || p.isOp("|") {
		if !inline {
			p.next()
		}
		inline = false
		t := p.cur()
		name, err := p.dottedName()
		if err != nil {
			return nil, err
		}
		f := &filterExpr{exprBase: exprBase{t.span}, name: name}
		if p.isOp("(") {
			if f.call, err = p.parseCallArgs(); err != nil {
				return nil, err
			}
		}
		fs = append(fs, f)
	}
	return fs, nil
}

func (p *parser) parseTest(x expr) (expr, error) {
	isTok := p.next()
	neg := p.skipName("not")
	name, err := p.dottedName()
	if err != nil {
		return nil, err
	}
	n := &testExpr{exprBase: exprBase{isTok.span}, x: x, name: name}
	t := p.cur()
	switch {
	case p.isOp("("):
		if n.call, err = p.parseCallArgs(); err != nil {
			return nil, err
		}
	case (t.typ == tokName || t.typ == tokString || t.typ == tokInt || t.typ == tokFloat ||
		(t.typ == tokOp && (t.val == "(" || t.val == "[" || t.val == "{"))) &&
		!(t.typ == tokName && (t.val == "else" || t.val == "or" || t.val == "and")):
		if p.isName("is") {
			return nil, p.fail(t, "You cannot chain multiple tests with is")
		}
		a, err := p.parsePrimary()
		if err != nil {
			return nil, err
		}
		if a, err = p.parsePostfix(a); err != nil {
			return nil, err
		}
		n.call.args = []expr{a}
	}
	if neg {
		return &unaryExpr{exprBase{isTok.span}, "not", n}, nil
	}
	return n, nil
}
