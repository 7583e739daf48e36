package jinja

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSeeds returns templates from the goldens as seed corpus.
func fuzzSeeds(f *testing.F) []string {
	var seeds []string
	files, _ := filepath.Glob(filepath.Join(goldenDir, "cases", "*.txtar"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		s := string(data)
		for _, m := range sectionRE.FindAllStringSubmatchIndex(s, -1) {
			name := s[m[2]:m[3]]
			if !strings.HasSuffix(name, ".jinja") {
				continue
			}
			body := s[m[1]:]
			if next := sectionRE.FindStringIndex(body); next != nil {
				body = body[:next[0]]
			}
			seeds = append(seeds, strings.TrimPrefix(body, "\n"))
		}
	}
	tpls, _ := filepath.Glob(filepath.Join(goldenDir, "templates", "*.jinja"))
	for _, file := range tpls[:min(len(tpls), 4)] {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, string(data))
	}
	return seeds
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tpl, err := Parse("fuzz", src, Options{Fuel: 20_000})
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Parse error %T is not *Error: %v", err, err)
			}
			return
		}
		if tpl == nil {
			t.Fatal("nil template without error")
		}
		tpl.LoopsOverMessageContent() // the content-format walk takes any parsed tree
	})
}

const fuzzVars = `{"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi \u00e9"}, {"role": "assistant", "content": "<think>r</think>ok", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1.5, "b": [1, null]}}}]}, {"role": "tool", "content": "res"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}], "add_generation_prompt": true, "n": 3, "f": 2.5e20, "s": "abc"}`

func FuzzRender(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, fuzzVars)
	}
	f.Add("{{ x }}", `{"x": [1, {"a": 1e400}]}`)
	f.Fuzz(func(t *testing.T, src, varsJSON string) {
		tpl, err := Parse("fuzz", src, Options{Fuel: 20_000})
		if err != nil {
			return
		}
		vars, err := VarsFromJSON([]byte(varsJSON))
		if err != nil {
			vars = nil
		}
		out, err := tpl.Execute(vars)
		if err != nil {
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("Execute error %T is not *Error: %v", err, err)
			}
			if e.Kind == 0 || !strings.Contains(e.Error(), "(in fuzz:") {
				t.Fatalf("malformed error %q", e.Error())
			}
			return
		}
		if len(out) > 1<<24 {
			t.Fatalf("output of %d bytes escaped the fuel limit", len(out))
		}
	})
}

func FuzzFromJSON(f *testing.F) {
	f.Add(fuzzVars)
	f.Add(`[1, 1.0, 1e-07, 2.5e+20, 1E400, -0, -0.0, "\ud83d\ude00", NaN, -Infinity]`)
	f.Fuzz(func(t *testing.T, data string) {
		v, err := FromJSON([]byte(data))
		if err != nil {
			return
		}
		s, err := dumpJSON(v, &jsonOptions{itemSep: ", ", keySep: ": "})
		if err != nil {
			t.Fatalf("dump of parsed JSON failed: %v", err)
		}
		v2, err := FromJSON([]byte(s))
		if err != nil {
			t.Fatalf("re-parse of %q failed: %v", s, err)
		}
		s2, _ := dumpJSON(v2, &jsonOptions{itemSep: ", ", keySep: ": "})
		if s != s2 {
			t.Fatalf("dump not stable: %q vs %q", s, s2)
		}
	})
}
