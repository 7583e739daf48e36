package jinja

import (
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
