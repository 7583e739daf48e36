package jinja

import (
	"cmp"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The goldens are produced by Python Jinja2 in transformers' setup:
// see testdata/jinja/README.md (there is no -update flag).
//
// JINJA_GOLDEN_DIR points the tests at another folder of the same layout
// (used to explore extra random seeds without committing them).
var goldenDir = cmp.Or(os.Getenv("JINJA_GOLDEN_DIR"), "../../testdata/jinja")

// fixedNow matches FIXED_NOW in tools/oracle/jinja_oracle.py.
var fixedNow = time.Date(2025, 3, 7, 14, 5, 9, 0, time.UTC)

type section struct{ name, body string }

var sectionRE = regexp.MustCompile(`(?m)^-- (.+?) --$`)

// readTxtar reads the oracle's txtar variant: every body ends with
// exactly one "\n" that is not part of the content.
func readTxtar(t *testing.T, path string) []section {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	marks := sectionRE.FindAllStringSubmatchIndex(s, -1)
	var out []section
	for i, m := range marks {
		start := m[1] + 1
		end := len(s)
		if i+1 < len(marks) {
			end = marks[i+1][0]
		}
		if start > end {
			start = end
		}
		out = append(out, section{s[m[2]:m[3]], strings.TrimSuffix(s[start:end], "\n")})
	}
	return out
}

func renderCase(name, tpl string, varsJSON []byte) (string, error) {
	vars := map[string]Value{}
	if varsJSON != nil {
		var err error
		if vars, err = VarsFromJSON(varsJSON); err != nil {
			return "", err
		}
	}
	t, err := Parse(name, tpl, Options{Now: func() time.Time { return fixedNow }, Fuel: 50_000_000})
	if err != nil {
		return "", err
	}
	return t.Execute(vars)
}

func checkResult(t *testing.T, got string, err error, want section) {
	t.Helper()
	switch {
	case strings.HasSuffix(want.name, ".out"):
		if err != nil {
			t.Fatalf("Execute error %v, want output %q", err, want.body)
		}
		if got != want.body {
			t.Fatalf("output mismatch\n got: %q\nwant: %q\n%s", got, want.body, firstDiff(got, want.body))
		}
	case strings.HasSuffix(want.name, ".err"):
		wantKind, _, _ := strings.Cut(want.body, ":")
		if err == nil {
			t.Fatalf("Execute = %q, want error %s", got, want.body)
		}
		e, ok := err.(*Error)
		if !ok {
			t.Fatalf("error %T %v is not *Error", err, err)
		}
		if e.Kind.String() != wantKind && !(wantKind == "SyntaxError" && e.Kind == KindSyntax) {
			t.Fatalf("error %v, want kind %s (%s)", err, wantKind, want.body)
		}
	}
}

func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-60)
	return "first difference at byte " + itoa(i) + ":\n got: " + quoteTail(a, lo, i) + "\nwant: " + quoteTail(b, lo, i)
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for i > 0 {
		d = append([]byte{byte('0' + i%10)}, d...)
		i /= 10
	}
	return string(d)
}

func quoteTail(s string, lo, i int) string {
	hi := min(len(s), i+60)
	if lo > len(s) {
		lo = len(s)
	}
	return `"` + strings.ReplaceAll(s[lo:hi], "\n", `\n`) + `"`
}

func TestCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "cases", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files: %v", err)
	}
	for _, file := range files {
		secs := readTxtar(t, file)
		by := map[string]string{}
		for _, s := range secs {
			by[s.name] = s.body
		}
		base := strings.TrimSuffix(filepath.Base(file), ".txtar")
		for _, s := range secs {
			if !strings.HasSuffix(s.name, ".jinja") {
				continue
			}
			c := strings.TrimSuffix(s.name, ".jinja")
			var want section
			if out, ok := by[c+".out"]; ok {
				want = section{c + ".out", out}
			} else if e, ok := by[c+".err"]; ok {
				want = section{c + ".err", e}
			} else {
				t.Errorf("%s: case %s has no expected result; run the oracle", file, c)
				continue
			}
			var vars []byte
			if v, ok := by[c+".json"]; ok {
				vars = []byte(v)
			} else if v, ok := by["_vars.json"]; ok {
				vars = []byte(v)
			}
			tpl := s.body
			t.Run(base+"/"+c, func(t *testing.T) {
				t.Parallel()
				got, err := renderCase(c, tpl, vars)
				checkResult(t, got, err, want)
			})
		}
	}
}

func TestTemplates(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "golden", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		src, err := os.ReadFile(filepath.Join(goldenDir, "templates", name+".jinja"))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range readTxtar(t, file) {
			set := strings.TrimSuffix(strings.TrimSuffix(s.name, ".out"), ".err")
			vars, err := os.ReadFile(filepath.Join(goldenDir, "messages", set+".json"))
			if err != nil {
				t.Fatal(err)
			}
			want := s
			t.Run(name+"/"+set, func(t *testing.T) {
				t.Parallel()
				got, err := renderCase(name, string(src), vars)
				checkResult(t, got, err, want)
			})
		}
	}
}

// TestHashableMatchesHashKey: hashable accepts exactly the keys hashKey does.
func TestHashableMatchesHashKey(t *testing.T) {
	m := NewMap()
	m.Set("a", Int(1))
	for _, k := range []Value{String("x"), None(), Bool(true), Int(3), Float(2.5), Float(2), List(Int(1)), MapValue(m),
		tuple(Int(1), String("y")), tuple(Int(1), List(Int(2))), tuple(tuple(None()), Bool(false)), undefined("u")} {
		_, want := hashKey(k)
		if got := hashable(k); got != want {
			t.Errorf("%s: hashable %v, hashKey ok %v", k.repr(), got, want)
		}
	}
}
