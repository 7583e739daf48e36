package jinja

import (
	"math/big"
	"strconv"
	"strings"
)

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
		x = &binaryExpr{exprBase: exprBase{start.span}, op: "or", l: x, r: r}
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
		x = &binaryExpr{exprBase: exprBase{start.span}, op: "and", l: x, r: r}
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
		b := &binaryExpr{exprBase: exprBase{start.span}, op: op, l: x, r: r}
		if inner, ok := x.(*binaryExpr); ok && op == "+" && inner.op == "+" {
			if inner.chain != nil {
				b.chain = append(inner.chain[:len(inner.chain):len(inner.chain)], r)
			} else {
				b.chain = []expr{inner.l, inner.r, r}
			}
		}
		x = b
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
		x = &binaryExpr{exprBase: exprBase{start.span}, op: op, l: x, r: r}
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
		x = &binaryExpr{exprBase: exprBase{start.span}, op: "**", l: x, r: r}
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
			return &attrExpr{eb, x, a.val, missingAttr("dict", a.val)}, nil
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
