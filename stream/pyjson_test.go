package stream

import (
	"math"
	"testing"
)

// Expected values are what CPython 3 prints for json.dumps(...,
// ensure_ascii=False) of the same values.
func TestPyFloat(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{1.5, "1.5"}, {100000, "100000.0"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
		{0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.2345678901234568e+17, "1.2345678901234568e+17"},
		{math.Copysign(0, -1), "-0.0"}, {2.5e-10, "2.5e-10"}, {123.456, "123.456"}, {0.1, "0.1"},
		{math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"}, {math.NaN(), "NaN"}, {-3, "-3.0"},
	}
	for _, tt := range tests {
		if got := pyFloat(tt.f); got != tt.want {
			t.Errorf("pyFloat(%v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}

func TestPyQuote(t *testing.T) {
	if got, want := pyQuote("a\"b\\c\n\r\t\b\f\x01é\x7f😀"), `"a\"b\\c\n\r\t\b\f\u0001é`+"\x7f"+`😀"`; got != want {
		t.Errorf("pyQuote = %s, want %s", got, want)
	}
}

func TestPyLiteralDumps(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{`{'a': (1, 2), 'b': [True, None]}`, `{"a": [1, 2], "b": [true, null]}`, true},
		{`{1: 'x', None: 2}`, `{"1": "x", "null": 2}`, true},
		{`0x1F`, `31`, true}, {`1_000`, `1000`, true}, {`-2.50`, `-2.5`, true}, {`'a' "b"`, `"ab"`, true},
		{`"\u00e9\n"`, `"é\n"`, true}, {`[1, 2,]`, `[1, 2]`, true}, {`(1,)`, `[1]`, true}, {`1e3`, `1000.0`, true},
		{`x`, ``, false}, {`007`, ``, false}, {`[1, 2`, ``, false}, {`True False`, ``, false}, {`{1, 2}`, ``, false},
	}
	for _, tt := range tests {
		got, _, _, ok := pyLiteralDumps(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("pyLiteralDumps(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPyJSONLoadsDumps(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{`{"a":1,"b":[1.0,2e3]}`, `{"a": 1, "b": [1.0, 2000.0]}`, true},
		{` "x" `, `"x"`, true}, {`NaN`, `NaN`, true}, {`-0`, `0`, true}, {`1E400`, `Infinity`, true},
		{`"\ud83d\ude00"`, `"😀"`, true}, {`12345678901234567890`, `12345678901234567890`, true},
		{`[1,]`, ``, false}, {`{'a': 1}`, ``, false}, {`01`, ``, false}, {"\"a\tb\"", ``, false}, {`{"a" 1}`, ``, false},
	}
	for _, tt := range tests {
		got, _, _, ok := pyJSONLoadsDumps(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("pyJSONLoadsDumps(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPyNumbers(t *testing.T) {
	for in, want := range map[string]string{" 42 ": "42", "+7": "7", "1_0": "10", "-0": "0"} {
		if got, ok := pyInt(in); !ok || got != want {
			t.Errorf("pyInt(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"1.0", "", "1__0", "_1", "0x10", "4 2"} {
		if got, ok := pyInt(in); ok {
			t.Errorf("pyInt(%q) = %q, want failure", in, got)
		}
	}
	for in, want := range map[string]string{"2.0": "2", "1e3": "1000", "0.1": "0.1", "1e20": "100000000000000000000", "-1.5": "-1.5", " 3 ": "3"} {
		if got, ok := pyNumberFloat(in); !ok || got != want {
			t.Errorf("pyNumberFloat(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"nan", "inf", "abc", "1.2.3"} {
		if got, ok := pyNumberFloat(in); ok {
			t.Errorf("pyNumberFloat(%q) = %q, want failure", in, got)
		}
	}
}

func TestQwenValue(t *testing.T) {
	ts := parseSchemas([]ToolSchema{{Name: "f", Parameters: []byte(`{"properties": {
		"s": {"type": "string"}, "b": {"type": "boolean"}, "n": {"type": "number"}, "i": {"type": "integer"},
		"o": {"type": "object"}, "ns": {"type": ["string", "null"]}, "any": {}, "opt": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}`)}})
	tests := []struct{ param, in, want string }{
		{"s", "null", `"null"`}, {"b", "yes", `false`}, {"b", "TRUE", `true`}, {"n", "abc", `"abc"`},
		{"i", "None", `null`}, {"o", `"{'k': 'v'}"`, `{"k": "v"}`}, {"o", `{'k': 1}`, `{"k": 1}`}, {"o", `not json`, `"not json"`},
		{"any", "[1, 2]", `"[1, 2]"`}, {"ns", "12", `12`}, {"any", "hello", `"hello"`}, {"opt", "none", `null`}, {"opt", "12", `12`},
		{"missing", "12", `"12"`}, {"ns", "x", `"x"`},
	}
	for _, tt := range tests {
		if got := ts.qwenValue("f", tt.param, tt.in); got != tt.want {
			t.Errorf("qwenValue(%s, %q) = %s, want %s", tt.param, tt.in, got, tt.want)
		}
	}
	if got := ts.glmValue("f", "s", "12"); got != `"12"` {
		t.Errorf("glmValue string = %s", got)
	}
	if got := ts.glmValue("f", "i", "12"); got != `12` {
		t.Errorf("glmValue int = %s", got)
	}
}
