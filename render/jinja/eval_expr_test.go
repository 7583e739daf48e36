package jinja

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPlusChainMatchesFold: a chain a + b + … is what folding binaryOp("+") left to right gives
// (Jinja2 evaluates it so), for chains of plain strings (joined at once, evalPlusChain), of more
// operands than its buffer, and with markup, numbers, lists, None and undefined operands at
// every position, and operands whose evaluation fails: the error is the one the fold meets first.
func TestPlusChainMatchesFold(t *testing.T) {
	operands := []struct {
		src string
		v   Value
	}{
		{`"ab"`, String("ab")},
		{`""`, String("")},
		{`s`, String("<s>")},
		{`"<m>"|safe`, markup("<m>")},
		{`1`, Int(1)},
		{`2.5`, Float(2.5)},
		{`[1]`, List(Int(1))},
		{`none`, None()},
		{`nope`, undefined("'nope' is undefined")},
		{`nope.x`, Value{}}, // evaluating it fails
	}
	evalErr, err := Parse("e", "{{ nope.x }}", Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, wantEvalErr := evalErr.Execute(nil)
	rng := rand.New(rand.NewPCG(7, 32))
	for round := range 3000 {
		n := 3 + rng.IntN(10)
		srcs := make([]string, n)
		vals := make([]Value, n)
		for i := range n {
			o := operands[rng.IntN(len(operands))]
			if rng.IntN(3) > 0 {
				o = operands[rng.IntN(3)] // mostly plain strings, so that long plain runs occur
			}
			srcs[i], vals[i] = o.src, o.v
		}
		src := `{%- set r = ` + strings.Join(srcs, " + ") + ` %}{{ r }}`
		tmpl, err := Parse("chain", src, Options{})
		if err != nil {
			t.Fatalf("round %d: %s: %v", round, src, err)
		}
		got, gotErr := tmpl.Execute(map[string]Value{"s": String("<s>")})

		want := vals[0]
		var wantErr error
		if srcs[0] == `nope.x` {
			wantErr = wantEvalErr
		}
		for i := 1; i < n && wantErr == nil; i++ {
			if srcs[i] == `nope.x` {
				wantErr = wantEvalErr
				break
			}
			want, wantErr = binaryOp("+", want, vals[i])
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("round %d: %s: error %v, fold %v", round, src, gotErr, wantErr)
		}
		if wantErr != nil {
			if errText(gotErr) != errText(wantErr) {
				t.Fatalf("round %d: %s: error %q, fold %q", round, src, gotErr, wantErr)
			}
			continue
		}
		var b strings.Builder
		if want.k == kString {
			b.WriteString(want.s)
		} else {
			want.writeRepr(&b, false)
		}
		if w := b.String(); got != w {
			t.Fatalf("round %d: %s: got %q, fold %q", round, src, got, w)
		}
	}
}

// errText is err's message without where it happened.
func errText(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind.String() + ": " + e.Detail
	}
	return err.Error()
}

// TestMissingAttrReason: an attribute missing from a value gives the undefined whose reason
// Jinja2 words as "'T object' has no attribute 'name'", for dicts (reason made when parsed,
// attrExpr.dictMissing) as for every other type.
func TestMissingAttrReason(t *testing.T) {
	dict := NewMap()
	dict.Set("a", Int(1))
	for _, tc := range []struct {
		name string
		v    Value
		want string
	}{
		{"dict", MapValue(dict), "'dict object' has no attribute 'nope'"},
		{"list", List(Int(1)), "'list object' has no attribute 'nope'"},
		{"str", String("s"), "'str object' has no attribute 'nope'"},
		{"int", Int(3), "'int object' has no attribute 'nope'"},
		{"none", None(), "'NoneType object' has no attribute 'nope'"},
	} {
		tmpl, err := Parse("missing", `{{ v.nope.x }}`, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, errAttr := tmpl.Execute(map[string]Value{"v": tc.v})
		if errAttr == nil || !strings.Contains(errAttr.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, errAttr, tc.want)
		}
		// The attr filter reaches the same reason through getAttr.
		filtered, err := Parse("missing", `{{ (v|attr("nope")).x }}`, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, errFiltered := filtered.Execute(map[string]Value{"v": tc.v})
		if errFiltered == nil || errAttr == nil || errText(errFiltered) != errText(errAttr) {
			t.Errorf("%s: attr filter error %v, attribute error %v", tc.name, errFiltered, errAttr)
		}
	}
}

// TestDictFromArgs: dict() and namespace() keep Python's key order and last-wins values with
// their entries presized (dictFromArgs), from keywords, a mapping, a namespace, pairs and nothing.
func TestDictFromArgs(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{{ dict(b=1, a=2) }}`, `{'b': 1, 'a': 2}`},
		{`{{ dict(d, c=3, a=4) }}`, `{'a': 4, 'b': 2, 'c': 3}`},
		{`{{ dict(d) }}`, `{'a': 1, 'b': 2}`},
		{`{{ dict() }}|{{ dict()|length }}`, `{}|0`},
		{`{{ dict([("x", 1), ("y", 2)], x=3) }}`, `{'x': 3, 'y': 2}`},
		{`{% set ns = namespace(d, z=0) %}{% set ns.a = 9 %}{{ ns.a }},{{ ns.b }},{{ ns.z }}`, `9,2,0`},
		{`{% set ns = namespace(namespace(p=1, q=2), q=3) %}{{ ns.p }},{{ ns.q }}`, `1,3`},
		{`{% set ns = namespace() %}{% set ns.k = 1 %}{{ ns.k }}`, `1`},
	} {
		tmpl, err := Parse("dict", tc.src, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		d := NewMap()
		d.Set("a", Int(1))
		d.Set("b", Int(2))
		got, err := tmpl.Execute(map[string]Value{"d": MapValue(d)})
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q (%v), want %q", tc.src, got, err, tc.want)
		}
	}
}
