package jinja

import "fmt"

// Kind classifies an [Error]. The set is closed; each kind is named after
// the Python exception Jinja2 raises in the same situation.
type Kind uint8

const (
	// KindSyntax: the template does not parse (TemplateSyntaxError).
	KindSyntax Kind = iota + 1
	// KindAssertion: an unknown filter or test outside a conditional
	// (TemplateAssertionError), detected at parse time.
	KindAssertion
	// KindUndefined: an undefined value was used where Python raises
	// (UndefinedError).
	KindUndefined
	// KindType: an operation on values of the wrong type (TypeError).
	KindType
	// KindValue: a value of the right type but wrong content (ValueError).
	KindValue
	// KindZeroDivision: division or modulo by zero (ZeroDivisionError).
	KindZeroDivision
	// KindSecurity: the sandbox refused an operation, such as a mutating
	// method on a list or dict (SecurityError).
	KindSecurity
	// KindTemplate: raise_exception was called (TemplateError).
	KindTemplate
	// KindRuntime: a runtime template error such as an unknown filter in
	// a conditional branch or assignment to a non-namespace
	// (TemplateRuntimeError).
	KindRuntime
	// KindFilterArgument: a filter got an unusable argument
	// (FilterArgumentError).
	KindFilterArgument
	// KindKey: a missing dict key where Python raises (KeyError).
	KindKey
	// KindIndex: an index out of range where Python raises (IndexError).
	KindIndex
	// KindAttribute: a missing attribute where Python raises
	// (AttributeError).
	KindAttribute
	// KindOverflow: a number too large to convert (OverflowError).
	KindOverflow
	// KindRecursion: macro recursion too deep (RecursionError).
	KindRecursion
	// KindFuel: the evaluation exceeded Options.Fuel steps. Python has no
	// such limit.
	KindFuel
)

var kindNames = [...]string{
	KindSyntax:         "TemplateSyntaxError",
	KindAssertion:      "TemplateAssertionError",
	KindUndefined:      "UndefinedError",
	KindType:           "TypeError",
	KindValue:          "ValueError",
	KindZeroDivision:   "ZeroDivisionError",
	KindSecurity:       "SecurityError",
	KindTemplate:       "TemplateError",
	KindRuntime:        "TemplateRuntimeError",
	KindFilterArgument: "FilterArgumentError",
	KindKey:            "KeyError",
	KindIndex:          "IndexError",
	KindAttribute:      "AttributeError",
	KindOverflow:       "OverflowError",
	KindRecursion:      "RecursionError",
	KindFuel:           "FuelExhausted",
}

// String returns the Python exception class name of the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is the only error type returned by Parse and Execute. Its message
// reads "kind: detail (in template:line)".
type Error struct {
	Kind   Kind
	Detail string // the cause, worded like Jinja2's message where one exists
	Name   string // template name given to Parse
	Line   int    // 1-based source line; 0 if unknown
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (in %s:%d)", e.Kind, e.Detail, e.Name, e.Line)
}

// Is makes errors.Is(err, ErrTemplate) and friends match by kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Detail == "" && t.Name == "" && t.Line == 0 && t.Kind == e.Kind
}

func newError(k Kind, name string, line int, format string, args ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, args...), Name: name, Line: line}
}

// errf builds an evaluation error; the evaluator fills in name and line.
func errf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, args...)}
}
