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
// # Jinja2 quirks reproduced
//
// Besides Python's own semantics, the engine follows what Jinja2's
// compiler actually does: a for loop's else block runs when no iteration
// completed its body (so also after break or continue in every
// iteration); slices are plain Python subscripts (errors propagate)
// except inside a {{ }} made only of literals, which Jinja2 folds at
// compile time; `-2 ** x` with a literal base runs as -(2 ** x); unknown
// filters and tests fail at parse time except inside if statements and
// conditional expressions; select/map family filters on a falsy input
// yield nothing without checking their arguments; markupsafe's Markup
// (from the safe and escape filters) escapes the other operand of + and %.
//
// # Known differences
//
// Float ** with a non-integral exponent uses Go's math.Pow, which can
// differ from glibc's pow in the last bit (integral exponents are exact,
// except for exact halfway cases, where glibc itself is inconsistent);
// complex results of negative bases are an error, not a complex number.
// str.format supports the common format-spec subset. A lone UTF-16
// surrogate in JSON input becomes U+FFFD. strftime_now treats the time as
// naive (%z and %Z are empty). The filters wordwrap, urlencode,
// filesizeformat, pprint, xmlattr and random and the globals cycler and
// lipsum are not provided (an unknown name, as in a Jinja2 environment
// without them). Deep nesting, huge repetitions and ints
// beyond 65536 bits fail instead of exhausting memory.
//
// # Limits
//
// Options.Fuel bounds the work of one Execute; nesting depth and macro
// recursion are bounded; range() is limited to 100000 items as in the
// sandbox. include, import and extends fail with KindType when executed,
// as in Jinja2 without a loader; block renders its body in place.
package jinja
