package jinja

import "math/big"

type bigIntAbs struct{}

func (bigIntAbs) abs(b *big.Int) *big.Int { return new(big.Int).Abs(b) }

// resolve binds filters and tests to their functions. As Jinja2's
// compiler does, an unknown filter or test is a TemplateAssertionError at
// parse time, except inside an if statement or conditional expression,
// where it fails only when evaluated (TemplateRuntimeError).
func resolve(name string, body []node) error {
	r := &resolver{name: name}
	r.nodes(body, false)
	return r.err
}

type resolver struct {
	name string
	err  error
}

func (r *resolver) fail(sp span, what, n string) {
	if r.err == nil {
		r.err = newError(KindAssertion, r.name, sp.line, "No %s named '%s'.", what, n)
	}
}

func (r *resolver) nodes(ns []node, soft bool) {
	for _, n := range ns {
		r.node(n, soft)
	}
}

func (r *resolver) node(n node, soft bool) {
	switch n := n.(type) {
	case *outputNode:
		r.expr(n.x, soft)
	case *ifNode:
		for i, t := range n.tests {
			r.expr(t, true)
			r.nodes(n.bodies[i], true)
		}
		r.nodes(n.els, true)
	case *forNode:
		r.expr(n.iter, soft)
		r.expr(n.cond, false)
		r.nodes(n.body, false)
		r.nodes(n.els, false)
	case *setNode:
		r.expr(n.value, soft)
	case *setBlockNode:
		r.filters(n.filters, soft)
		r.nodes(n.body, false)
	case *macroNode:
		r.macro(n.m)
	case *callBlockNode:
		r.expr(n.call, soft)
		r.macro(n.caller)
	case *filterBlockNode:
		r.filters(n.filters, soft)
		r.nodes(n.body, false)
	case *withNode:
		for _, v := range n.values {
			r.expr(v, soft)
		}
		r.nodes(n.body, false)
	case *generationNode:
		r.nodes(n.body, soft)
	}
}

func (r *resolver) macro(m *macroDef) {
	for _, d := range m.defaults {
		r.expr(d, false)
	}
	r.nodes(m.body, false)
}

func (r *resolver) filters(fs []*filterExpr, soft bool) {
	for _, f := range fs {
		r.filter(f, soft)
	}
}

func (r *resolver) filter(f *filterExpr, soft bool) {
	f.fn = lookupFilter(f.name)
	if f.fn == nil && !soft {
		r.fail(f.span, "filter", f.name)
	}
	r.args(&f.call, soft)
}

func (r *resolver) args(c *callArgs, soft bool) {
	for _, a := range c.args {
		r.expr(a, soft)
	}
	for _, a := range c.kwVals {
		r.expr(a, soft)
	}
	r.expr(c.dynArgs, soft)
	r.expr(c.dynKw, soft)
}

func (r *resolver) expr(x expr, soft bool) {
	switch x := x.(type) {
	case nil:
	case *listExpr:
		for _, it := range x.items {
			r.expr(it, soft)
		}
	case *tupleExpr:
		for _, it := range x.items {
			r.expr(it, soft)
		}
	case *dictExpr:
		for i := range x.keys {
			r.expr(x.keys[i], soft)
			r.expr(x.values[i], soft)
		}
	case *attrExpr:
		r.expr(x.x, soft)
	case *itemExpr:
		r.expr(x.x, soft)
		r.expr(x.key, soft)
	case *sliceExpr:
		r.expr(x.start, soft)
		r.expr(x.stop, soft)
		r.expr(x.step, soft)
	case *callExpr:
		r.expr(x.fn, soft)
		r.args(&x.callArgs, soft)
	case *filterExpr:
		r.expr(x.x, soft)
		r.filter(x, soft)
	case *testExpr:
		r.expr(x.x, soft)
		x.fn = lookupTest(x.name)
		if x.fn == nil && !soft {
			r.fail(x.span, "test", x.name)
		}
		r.args(&x.call, soft)
	case *unaryExpr:
		r.expr(x.x, soft)
	case *binaryExpr:
		r.expr(x.l, soft)
		r.expr(x.r, soft)
	case *compareExpr:
		r.expr(x.first, soft)
		for _, it := range x.rest {
			r.expr(it, soft)
		}
	case *concatExpr:
		for _, it := range x.items {
			r.expr(it, soft)
		}
	case *condExpr:
		r.expr(x.test, true)
		r.expr(x.yes, true)
		r.expr(x.no, true)
	}
}

// markMacro records whether a macro body refers to caller, varargs or
// kwargs (Jinja2's find_undeclared on the body).
func markMacro(m *macroDef) {
	var walkNodes func([]node)
	var walkExpr func(expr)
	walkExpr = func(x expr) {
		switch x := x.(type) {
		case nil:
		case *nameExpr:
			switch x.name {
			case "caller":
				m.callerUsed = true
			case "varargs":
				m.catchVarargs = true
			case "kwargs":
				m.catchKwargs = true
			}
		case *listExpr:
			for _, it := range x.items {
				walkExpr(it)
			}
		case *tupleExpr:
			for _, it := range x.items {
				walkExpr(it)
			}
		case *dictExpr:
			for i := range x.keys {
				walkExpr(x.keys[i])
				walkExpr(x.values[i])
			}
		case *attrExpr:
			walkExpr(x.x)
		case *itemExpr:
			walkExpr(x.x)
			walkExpr(x.key)
		case *sliceExpr:
			walkExpr(x.start)
			walkExpr(x.stop)
			walkExpr(x.step)
		case *callExpr:
			walkExpr(x.fn)
			walkArgs(&x.callArgs, walkExpr)
		case *filterExpr:
			walkExpr(x.x)
			walkArgs(&x.call, walkExpr)
		case *testExpr:
			walkExpr(x.x)
			walkArgs(&x.call, walkExpr)
		case *unaryExpr:
			walkExpr(x.x)
		case *binaryExpr:
			walkExpr(x.l)
			walkExpr(x.r)
		case *compareExpr:
			walkExpr(x.first)
			for _, it := range x.rest {
				walkExpr(it)
			}
		case *concatExpr:
			for _, it := range x.items {
				walkExpr(it)
			}
		case *condExpr:
			walkExpr(x.test)
			walkExpr(x.yes)
			walkExpr(x.no)
		}
	}
	walkNodes = func(ns []node) {
		for _, n := range ns {
			switch n := n.(type) {
			case *outputNode:
				walkExpr(n.x)
			case *ifNode:
				for i, t := range n.tests {
					walkExpr(t)
					walkNodes(n.bodies[i])
				}
				walkNodes(n.els)
			case *forNode:
				walkExpr(n.iter)
				walkExpr(n.cond)
				walkNodes(n.body)
				walkNodes(n.els)
			case *setNode:
				walkExpr(n.value)
			case *setBlockNode:
				for _, f := range n.filters {
					walkArgs(&f.call, walkExpr)
				}
				walkNodes(n.body)
			case *callBlockNode:
				walkExpr(n.call)
			case *filterBlockNode:
				for _, f := range n.filters {
					walkArgs(&f.call, walkExpr)
				}
				walkNodes(n.body)
			case *withNode:
				for _, v := range n.values {
					walkExpr(v)
				}
				walkNodes(n.body)
			case *generationNode:
				walkNodes(n.body)
			}
		}
	}
	walkNodes(m.body)
}

func walkArgs(c *callArgs, f func(expr)) {
	for _, a := range c.args {
		f(a)
	}
	for _, a := range c.kwVals {
		f(a)
	}
	f(c.dynArgs)
	f(c.dynKw)
}
