package stream

import (
	"encoding/json"
	"testing"
)

// scanValue feeds b to a fresh scanner and reports whether b is exactly one
// JSON value (surrounding whitespace allowed).
func scanValue(b []byte) bool {
	var s jsonScanner
	s.reset()
	done := false
	for _, c := range b {
		if done {
			if !isSpace(c) {
				return false
			}
			continue
		}
		switch s.step(c) {
		case scanSyntaxErr:
			return false
		case scanEnd:
			done = true
		case scanEndBefore:
			done = true
			if !isSpace(c) {
				return false
			}
		}
	}
	return done || s.complete()
}

func TestJSONScanner(t *testing.T) {
	t.Parallel()
	tests := []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `1E+2`, `true`, `false`, `null`, ` {"a" : [1, {"b":null}] } `,
		`"\u00e9\n\"\\\/"`, `[1,2,]`, `{"a":1,}`, `01`, `1.`, `.5`, `-`, `1e`, `tru`, `nul`, `{"a"}`, `{1:2}`,
		`"a` + "\x01" + `"`, `"\x"`, `"\u12G4"`, `[`, `]`, `{"a":1}}`, `1 2`, `[1 2]`, `{"a":1 "b":2}`, "\"é\"",
	}
	for _, in := range tests {
		if got, want := scanValue([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("scan(%q) = %v, want %v", in, got, want)
		}
	}
}

// FuzzJSONScanner checks the incremental scanner against encoding/json.
func FuzzJSONScanner(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5e3, "x\u00e9"], "b": {"c": null}}`, `[true,false]`, `-0.0`, `"\\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := scanValue(in), json.Valid(in); got != want {
			t.Fatalf("scan(%q) = %v, json.Valid = %v", in, got, want)
		}
	})
}
