// Package jinja renders Hugging Face chat templates with the semantics of
// Python Jinja2 3.1 as transformers configures it:
// ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
// extensions=[loopcontrols]) with transformers' tojson filter and the
// raise_exception and strftime_now globals.
//
// # Pipeline
//
// The lexer (lexer.go) applies Jinja2's whitespace rules, the parser
// (parser.go) builds the AST (ast.go), resolve binds filters and tests,
// and the evaluator (eval.go) walks the AST over [Value]s (value.go).
//
// # Python semantics
//
// Values behave like the Python objects Jinja2 would see after
// json.loads: dicts keep insertion order, ints have arbitrary size,
// floats print as Python's repr (1.0, 1e-07, 2.5e+20, inf), None, True
// and False print capitalized, lists and dicts print as Python's repr,
// strings index by code point, and tojson equals
// json.dumps(x, ensure_ascii=False) with its indent, separators and
// sort_keys options. Where Python raises, Execute returns an *Error whose
// Kind names the Python exception.
//
// # Sandbox
//
// As in ImmutableSandboxedEnvironment, mutating list and dict methods
// (append, update, pop…) and dunder attributes are refused with
// KindSecurity when used; namespace attributes may be assigned with
// {% set ns.attr = … %}.
//
// # Limits
//
// Options.Fuel bounds the work of one Execute; nesting depth and macro
// recursion are bounded; range() is limited to 100000 items as in the
// sandbox. include, import and extends fail with KindType when executed,
// as in Jinja2 without a loader; block renders its body in place.
package jinja
