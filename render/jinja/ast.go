package jinja

// node is a template statement.
type node interface{ nodeSpan() span }

// expr is an expression.
type expr interface{ exprSpan() span }

type stmtBase struct{ span }

func (s stmtBase) nodeSpan() span { return s.span }

type exprBase struct{ span }

func (e exprBase) exprSpan() span { return e.span }

// Statements.
type (
	textNode struct {
		stmtBase
		text string
	}
	outputNode struct {
		stmtBase
		x        expr
		constant bool // x is made only of literals
	}
	ifNode struct {
		stmtBase
		tests  []expr
		bodies [][]node
		els    []node
	}
	forNode struct {
		stmtBase
		target    expr // *nameExpr or *tupleExpr of names
		iter      expr
		cond      expr // nil without "if"
		body, els []node
		recursive bool
		guard     *loopGuard // set when the loop may end once its guard is false (guard.go)
	}
	setNode struct {
		stmtBase
		target expr // *nameExpr, *tupleExpr or *nsRefExpr
		value  expr
	}
	setBlockNode struct {
		stmtBase
		target  expr
		filters []*filterExpr // applied innermost first; x is nil
		body    []node
	}
	macroNode struct {
		stmtBase
		name string
		m    *macroDef
	}
	callBlockNode struct {
		stmtBase
		call   *callExpr
		caller *macroDef
	}
	filterBlockNode struct {
		stmtBase
		filters []*filterExpr
		body    []node
	}
	withNode struct {
		stmtBase
		targets []expr
		values  []expr
		body    []node
	}
	loopControlNode struct {
		stmtBase
		brk bool
	}
	// errorNode fails when executed.
	errorNode struct {
		stmtBase
		kind Kind
		msg  string
	}
	// generationNode is transformers' {% generation %} block, rendered
	// as its body.
	generationNode struct {
		stmtBase
		body []node
	}
)

// macroDef is the shared shape of a macro and of a call block's caller.
type macroDef struct {
	name     string
	params   []string
	defaults []expr // aligned to the end of params
	body     []node
	// catchKwargs, catchVarargs, callerUsed report whether the body
	// references kwargs, varargs or caller.
	catchKwargs, catchVarargs, callerUsed bool
}

// Expressions.
type (
	constExpr struct {
		exprBase
		v Value
	}
	nameExpr struct {
		exprBase
		name string
	}
	nsRefExpr struct {
		exprBase
		name, attr string
	}
	listExpr struct {
		exprBase
		items []expr
	}
	tupleExpr struct {
		exprBase
		items []expr
	}
	dictExpr struct {
		exprBase
		keys, values []expr
	}
	attrExpr struct {
		exprBase
		x    expr
		name string
		// dictMissing is missingAttr("dict", name), made once: the reason of the undefined
		// value a dict without the key gives (`message.reasoning_content is defined`).
		dictMissing string
	}
	itemExpr struct {
		exprBase
		x, key expr
	}
	sliceExpr struct {
		exprBase
		start, stop, step expr // nil when omitted
	}
	callExpr struct {
		exprBase
		fn expr
		callArgs
	}
	filterExpr struct {
		exprBase
		x    expr // nil in a filter block
		name string
		call callArgs
		fn   filterFunc // resolved after parsing; nil if unknown
	}
	testExpr struct {
		exprBase
		x    expr
		name string
		call callArgs
		fn   testFunc
	}
	unaryExpr struct {
		exprBase
		op string // "-", "+", "not"
		x  expr
	}
	binaryExpr struct {
		exprBase
		op   string // + - * / // % ** and or
		l, r expr
		// chain lists the operands of a left-nested a + b + c (set on the
		// outermost + by the parser), evaluated by evalPlusChain.
		chain []expr
	}
	compareExpr struct {
		exprBase
		first expr
		ops   []string // == != < <= > >= in notin
		rest  []expr
	}
	concatExpr struct {
		exprBase
		items []expr
	}
	condExpr struct {
		exprBase
		test, yes, no expr // no may be nil
	}
)

// callArgs holds the arguments of a filter or test call.
type callArgs struct {
	args    []expr
	kwNames []string
	kwVals  []expr
	dynArgs expr
	dynKw   expr
}
