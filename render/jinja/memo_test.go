package jinja

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// memoCheck renders vars with ExecuteMemo(prev) and with Execute and fails unless both give the
// same output, or both fail with the same error. It returns the new memo (nil after an error).
func memoCheck(t *testing.T, tpl *Template, vars map[string]Value, prev *Memo, what string) *Memo {
	t.Helper()
	want, wantErr := tpl.Execute(vars)
	got, memo, err := tpl.ExecuteMemo(vars, prev)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%s: ExecuteMemo error %v, Execute error %v", what, err, wantErr)
	case err != nil:
		if err.Error() != wantErr.Error() {
			t.Fatalf("%s: ExecuteMemo error %q, Execute error %q", what, err, wantErr)
		}
	case got != want:
		t.Fatalf("%s: ExecuteMemo differs from Execute\n%s", what, firstDiff(got, want))
	}
	if err == nil && prev != nil {
		if n, want := memo.CommonPrefix(), commonPrefixNaive(prev.text, got); n != want {
			t.Fatalf("%s: CommonPrefix = %d, want %d", what, n, want)
		}
	}
	return memo
}

// memoWalk drives one conversation of 40 turns through ExecuteMemo, each checked against Execute
// by memoCheck: most turns append grow's messages; others branch from an earlier turn (its
// messages and memo, plus newMsg's), edit an earlier message (newMsg's in its place), or replace
// one with an equal copy (== holds, the pointers differ). vars builds a turn's variables from its
// messages; what names the conversation in failures.
func memoWalk(t *testing.T, rng *rand.Rand, tpl *Template, grow func() []Value, newMsg func() Value, vars func([]Value) map[string]Value, what string) {
	t.Helper()
	var msgs []Value
	var history [][]Value
	var memos []*Memo
	var memo *Memo
	for step := range 40 {
		switch op := rng.IntN(10); {
		case op < 6:
			msgs = append(msgs, grow()...)
		case op == 6 && len(memos) > 0:
			i := rng.IntN(len(memos))
			msgs, memo = append(append([]Value(nil), history[i]...), newMsg()), memos[i]
		case op == 7 && len(msgs) > 0:
			msgs = append([]Value(nil), msgs...)
			msgs[rng.IntN(len(msgs))] = newMsg()
		case op == 8 && len(msgs) > 0:
			msgs = append([]Value(nil), msgs...)
			i := rng.IntN(len(msgs))
			src, c := msgs[i].mapv(), NewMap()
			for j := range src.keys {
				c.set(src.keys[j], src.vals[j])
			}
			msgs[i] = MapValue(c)
		}
		if next := memoCheck(t, tpl, vars(msgs), memo, fmt.Sprintf("%s step %d", what, step)); next != nil {
			memo = next
			history, memos = append(history, append([]Value(nil), msgs...)), append(memos, next)
		}
	}
}

func commonPrefixNaive(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// withMessages returns a copy of vars whose messages are msgs.
func withMessages(vars map[string]Value, msgs []Value) map[string]Value {
	v := maps.Clone(vars)
	v["messages"] = List(msgs...)
	return v
}

// TestMemoRealTemplates grows every golden conversation one message at a time (how a chat
// continues), replaying from the previous turn's memo, then shrinks and shuffles it: every render
// must equal a plain Execute. The real templates read neighbours, loop.last, namespace values
// set by reverse scans, macros and the generation prompt, which is what the memo must get right.
func TestMemoRealTemplates(t *testing.T) {
	tpls, err := filepath.Glob(filepath.Join(goldenDir, "templates", "*.jinja"))
	if err != nil || len(tpls) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	sets, err := filepath.Glob(filepath.Join(goldenDir, "messages", "*.json"))
	if err != nil || len(sets) == 0 {
		t.Fatalf("no message sets: %v", err)
	}
	for _, file := range tpls {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(file), ".jinja")
		tpl, err := Parse(name, string(src), Options{Now: func() time.Time { return fixedNow }, Fuel: 50_000_000})
		if err != nil {
			t.Fatal(err)
		}
		for _, set := range sets {
			data, err := os.ReadFile(set)
			if err != nil {
				t.Fatal(err)
			}
			vars, err := VarsFromJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			msgs := vars["messages"].list()
			t.Run(name+"/"+filepath.Base(set), func(t *testing.T) {
				t.Parallel()
				var memo *Memo
				for k := 1; k <= len(msgs); k++ {
					if m := memoCheck(t, tpl, withMessages(vars, msgs[:k]), memo, "grow"); m != nil {
						memo = m
					}
				}
				for k := len(msgs) - 1; k >= 1; k-- {
					if m := memoCheck(t, tpl, withMessages(vars, msgs[:k]), memo, "shrink"); m != nil {
						memo = m
					}
				}
				rng := rand.New(rand.NewPCG(uint64(len(msgs)), 7))
				for range 8 {
					shuffled := append([]Value(nil), msgs...)
					rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
					if m := memoCheck(t, tpl, withMessages(vars, shuffled), memo, "shuffle"); m != nil {
						memo = m
					}
				}
				flipped := maps.Clone(vars)
				flipped["add_generation_prompt"] = Bool(!vars["add_generation_prompt"].truth())
				memoCheck(t, tpl, flipped, memo, "generation prompt flipped")
			})
		}
	}
}

// TestMemoCases renders every oracle case template with a memo from its own earlier execution
// and from the executions of other variable sets: replay must never change an output or an error.
func TestMemoCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "cases", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files: %v", err)
	}
	var varSets []map[string]Value
	var tpls []string
	for _, file := range files {
		for _, s := range readTxtar(t, file) {
			switch {
			case strings.HasSuffix(s.name, ".jinja"):
				tpls = append(tpls, s.body)
			case strings.HasSuffix(s.name, ".json"):
				if v, err := VarsFromJSON([]byte(s.body)); err == nil {
					varSets = append(varSets, v)
				}
			}
		}
	}
	fuzz, err := VarsFromJSON([]byte(fuzzVars))
	if err != nil {
		t.Fatal(err)
	}
	varSets = append(varSets, fuzz)
	rng := rand.New(rand.NewPCG(1, 2))
	for i, src := range tpls {
		tpl, err := Parse("case", src, Options{Now: func() time.Time { return fixedNow }, Fuel: 2_000_000})
		if err != nil {
			continue
		}
		var memo *Memo
		for range 6 {
			vars := varSets[rng.IntN(len(varSets))]
			if m := memoCheck(t, tpl, vars, memo, "case "+itoa(i)); m != nil {
				memo = m
			}
			memoCheck(t, tpl, vars, memo, "case "+itoa(i)+" again")
		}
	}
}

// TestMemoStatefulConstructs covers what carries state between iterations or changes behind a
// pointer: each template is rendered with growing and edited inputs, replaying from the last memo.
func TestMemoStatefulConstructs(t *testing.T) {
	tpls := map[string]string{
		"namespace written in the loop": `{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + m|length %}{{ ns.n }},{% endfor %}`,
		"namespace written by a macro":  `{% set ns = namespace(n=0) %}{% macro bump() %}{% set ns.n = ns.n + 1 %}{% endmacro %}{% for m in messages %}{{ bump() }}{{ ns.n }}{% endfor %}`,
		"namespace read":                `{% set ns = namespace(last=-1) %}{% for m in messages %}{% if m == 'u' %}{% set ns.last = loop.index0 %}{% endif %}{% endfor %}{% for m in messages %}{{ loop.index0 > ns.last }}{% endfor %}`,
		"namespace passed whole":        `{% set ns = namespace(a=1) %}{% for m in messages %}{% set ns.a = ns.a + 1 %}{% endfor %}{% for m in messages %}{{ ns }}{% endfor %}`,
		// Namespace state machines (DeepSeek's templates): replayed with their writes.
		"namespace state machine": `{% set ns = namespace(tool=false, first=true, n=0) %}{% for m in messages %}{% if m == 'u' %}{% set ns.tool = false %}{% set ns.first = true %}` +
			`{% elif m == 'a' %}{% if ns.tool %}</t>{% endif %}{% set ns.tool = true %}{% if ns.first %}<f>{% set ns.first = false %}{% endif %}{% endif %}{% set ns.n = ns.n + 1 %}[{{ m }}{{ ns.n }}{{ ns.tool }}]{% endfor %}{{ ns.tool }}{{ ns.n }}`,
		"namespace alias": `{% set ns = namespace(x=0) %}{% set al = ns %}{% for m in messages %}{{ al.x }}{% set ns.x = ns.x + 1 %}{{ al.x }}{% endfor %}{{ ns.x }}`,
		"namespace alias by branch": `{% set ns = namespace(x=0) %}{% if messages|length is even %}{% set al = ns %}{% else %}{% set al = namespace(x=7) %}{% endif %}` +
			`{% for m in messages %}{% set ns.x = ns.x + 1 %}{{ al.x }}{% endfor %}`,
		"namespace compare after write":                `{% set ns = namespace(a=0) %}{% for m in messages %}{% set ns.a = loop.index0 %}{% if ns.a == flag %}={% endif %}{% if loop.index0 > ns.a %}>{% endif %}{% endfor %}`,
		"namespace compare before write":               `{% set ns = namespace(a=-1) %}{% for m in messages %}{% if loop.index0 > ns.a + flag %}>{% endif %}{% if m == 'u' %}{% set ns.a = loop.index0 %}{% endif %}{% endfor %}{{ ns.a }}`,
		"namespace list value":                         `{% set ns = namespace(l=[]) %}{% for m in messages %}{% set ns.l = ns.l + [m] %}{{ ns.l|length }}{% endfor %}{{ ns.l|join }}`,
		"namespace read by a varying key":              `{% set ns = namespace(s="") %}{% for m in messages %}{% set ns.s = ns.s ~ m %}{{ ns.s[loop.revindex0] }}{{ ns.s[flag] }}|{% endfor %}`,
		"two namespaces":                               `{% set a = namespace(x=0) %}{% set b = namespace(y=0) %}{% for m in messages %}{% set a.x = a.x + 1 %}{% set b.y = b.y + a.x %}{{ b.y }}{% endfor %}`,
		"namespace in nested loop":                     `{% set ns = namespace(first=true) %}{% for m in messages %}{% for c in m %}{% if ns.first %}^{% set ns.first = false %}{% endif %}{{ c }}{% endfor %}{% if m == 'u' %}{% set ns.first = true %}{% endif %}{% endfor %}`,
		"namespace written by a macro with outer read": `{% set ns = namespace(n=0) %}{% macro bump(k) %}{% set ns.n = ns.n + k %}{% endmacro %}{% for m in messages %}{{ bump(flag) }}{{ ns.n }}{% endfor %}`,
		"joiner":                    `{% set j = joiner('|') %}{% for m in messages %}{{ j() }}{{ m }}{% endfor %}`,
		"loop.changed":              `{% for m in messages %}{% if loop.changed(m) %}[{{ m }}]{% endif %}{% endfor %}`,
		"loop.cycle":                `{% for m in messages %}{{ loop.cycle('a', 'b', 'c') }}{% endfor %}`,
		"loop object escapes":       `{% for m in messages %}{% set l = loop %}{{ l.last }}{{ l.length }}{% endfor %}`,
		"loop attributes":           `{% for m in messages %}{{ loop.index }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.previtem }}{{ loop.nextitem }}{% endfor %}`,
		"neighbours":                `{% for m in messages %}{% if loop.first or messages[loop.index0 - 1] != m %}<{% endif %}{{ m }}{% if loop.last or messages[loop.index0 + 1] != m %}>{% endif %}{% endfor %}`,
		"length and slices":         `{% for m in messages %}{{ messages|length }}{{ messages[-1] }}{{ messages[1:]|join }}{% endfor %}`,
		"top-level set read":        `{% set last = messages[-1] %}{% for m in messages %}{{ m == last }}{% endfor %}`,
		"macro":                     `{% macro show(x) %}({{ x }}{{ messages|length }}){% endmacro %}{% for m in messages %}{{ show(m) }}{% endfor %}`,
		"macro redefined in branch": `{% if messages|length is even %}{% macro f(x) %}E{{ x }}{% endmacro %}{% else %}{% macro f(x) %}O{{ x }}{% endmacro %}{% endif %}{% for m in messages %}{{ f(m) }}{% endfor %}`,
		"with-block macro via namespace": `{% set ns = namespace(f=none) %}{% with n = messages|length %}{% macro g(x) %}{{ x }}{{ n }}{% endmacro %}{% set ns.f = g %}{% endwith %}` +
			`{% set h = ns.f %}{% for m in messages %}{{ h(m) }}{% endfor %}`,
		"strftime_now":            `{% for m in messages %}{{ strftime_now('%H:%M:%S') }}{% endfor %}`,
		"break and continue":      `{% for m in messages %}{% if m == 'x' %}{% break %}{% endif %}{% if m == 'u' %}{% continue %}{% endif %}{{ m }}{% else %}empty{% endfor %}`,
		"filtered loop":           `{% for m in messages if m != 'u' %}{{ loop.index }}{{ m }}{{ loop.last }}{% endfor %}`,
		"set block":               `{% set s %}{% for m in messages %}{{ m }}{% endfor %}{% endset %}{{ s|upper }}`,
		"nested loops":            `{% for m in messages %}{% for c in m %}{{ loop.index }}{{ c }}{% endfor %}{{ loop.index }}{% endfor %}`,
		"undefined outer":         `{% for m in messages %}{{ extra is defined }}{{ extra }}{% endfor %}`,
		"method on outer":         `{% for m in messages %}{{ messages[0].upper() }}{{ sep.join(['a', m]) }}{% endfor %}`,
		"tuple items":             `{% for k, v in pairs %}{{ k }}={{ v }};{% endfor %}`,
		"raise":                   `{% for m in messages %}{% if m == 'boom' %}{{ raise_exception('no ' + m) }}{% endif %}{{ m }}{% endfor %}`,
		"loop inside a macro":     `{% macro m(x) %}{% if loop is defined %}D{% endif %}{% if loop != x %}N{% endif %}{% endmacro %}{% for s in messages %}{{ m(s) }}{% endfor %}`,
		"compare inner and outer": `{% for m in messages %}{% set x = 1 %}{% if x != flag %}A{% else %}B{% endif %}{% endfor %}`,
		"compare outer values":    `{% set ns = namespace(last=-1) %}{% for m in messages %}{% if m == 'u' %}{% set ns.last = loop.index0 %}{% endif %}{% endfor %}{% for m in messages %}{% if loop.index0 > ns.last %}>{% endif %}{% if messages[loop.index0 - 1] != m %}~{% endif %}{{ m }}{% endfor %}`,
		"recursive":               `{% for m in tree recursive %}{{ m.n }}{% if m.c %}({{ loop(m.c) }}){% endif %}{% endfor %}`,
	}
	seqs := [][]string{
		{"u"}, {"u", "a"}, {"u", "a", "u"}, {"u", "a", "u", "x", "a"}, {"u", "a", "u", "x", "a", "a"},
		{"a", "a", "u", "x"}, {"u", "boom"}, {"u"}, {"a", "u", "a", "u", "a"}, {"a", "u", "a", "u", "a", "u"},
	}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, src := range tpls {
		t.Run(name, func(t *testing.T) {
			now := clock
			tpl, err := Parse(name, src, Options{Now: func() time.Time { now = now.Add(time.Second); return now }})
			if err != nil {
				t.Fatal(err)
			}
			var memo *Memo
			for i, seq := range seqs {
				msgs := make([]Value, len(seq))
				for j, s := range seq {
					msgs[j] = String(s)
				}
				vars := map[string]Value{"messages": List(msgs...), "sep": String(seq[0])}
				if i%3 == 1 {
					vars["extra"] = Int(int64(i))
				}
				vars["flag"] = Int(int64(1 + i%2))
				pairs := make([]Value, len(seq))
				for j, s := range seq {
					pairs[j] = tuple(String(s), Int(int64(j%2)))
				}
				vars["pairs"] = List(pairs...)
				leaf := NewMap()
				leaf.Set("n", String(seq[len(seq)-1]))
				node := NewMap()
				node.Set("n", String(seq[0]))
				node.Set("c", List(MapValue(leaf)))
				vars["tree"] = List(MapValue(node), MapValue(leaf))
				// Render twice so time-dependent output is compared on equal clocks: strftime_now
				// advances the clock on every call.
				saved := now
				want, wantErr := tpl.Execute(vars)
				now = saved
				got, m, err := tpl.ExecuteMemo(vars, memo)
				if (err == nil) != (wantErr == nil) || err == nil && got != want || err != nil && err.Error() != wantErr.Error() {
					t.Fatalf("step %d %v: ExecuteMemo = %q, %v; Execute = %q, %v", i, seq, got, err, want, wantErr)
				}
				if m != nil {
					memo = m
				}
			}
		})
	}
}

// TestMemoReplays checks that replay happens: a conversation continued by one message runs only
// the iterations that changed.
func TestMemoReplays(t *testing.T) {
	tpl, err := Parse("t", `{% for m in messages %}<{{ m.role }}>{{ m.content }}{% if loop.last %}!{% endif %}{% endfor %}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Value{roleMessage("user", "a"), roleMessage("assistant", "b"), roleMessage("user", "c")}
	_, memo, err := tpl.ExecuteMemo(map[string]Value{"messages": List(msgs...)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, roleMessage("assistant", "d"))
	out, next, err := tpl.ExecuteMemo(map[string]Value{"messages": List(msgs...)}, memo)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<user>a<assistant>b<user>c<assistant>d!"; out != want {
		t.Fatalf("out = %q, want %q", out, want)
	}
	var recs []iterRecord
	for _, r := range next.loops {
		recs = r.records()
	}
	prev := func() []iterRecord {
		for _, r := range memo.loops {
			return r.records()
		}
		return nil
	}()
	for i := range 2 {
		if next.out(&recs[i]) != memo.out(&prev[i]) || len(recs[i].loopReads()) != len(prev[i].loopReads()) || &recs[i].loopReads()[0] != &prev[i].loopReads()[0] {
			t.Errorf("iteration %d was run again, want replayed", i)
		}
	}
	if &recs[2].loopReads()[0] == &prev[2].loopReads()[0] {
		t.Error("iteration 2 (loop.last changed) was replayed")
	}
}

func FuzzMemo(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, fuzzVars, `{"messages": [{"role": "user", "content": "x"}], "n": 4}`)
	}
	// Comparisons fixed by position, which bulk replay takes without evaluating (positionalRefs).
	f.Add(`{% for m in messages %}{% if messages[loop.index0 + 1] is defined and messages[loop.index0 + 1].role != "tool" %}|{% endif %}`+
		`{% if messages[loop.index - 2].role == "user" %}<{% endif %}{{ m.content }}{% endfor %}`,
		`{"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}, {"role": "user", "content": "c"}]}`,
		`{"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}, {"role": "user", "content": "c"}, {"role": "tool", "content": "d"}]}`)
	// A namespace state machine, replayed with its writes.
	f.Add(`{% set ns = namespace(t=false, n=0) %}{% for m in messages %}{% if m.role == "tool" %}{% if not ns.t %}<{% endif %}{% set ns.t = true %}`+
		`{% else %}{% if ns.t %}>{% endif %}{% set ns.t = false %}{% endif %}{% set ns.n = ns.n + 1 %}{{ ns.n }}{% endfor %}{{ ns.t }}`,
		`{"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}, {"role": "tool", "content": "c"}]}`,
		`{"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}, {"role": "tool", "content": "c"}, {"role": "user", "content": "d"}]}`)
	f.Fuzz(func(t *testing.T, src, vars1, vars2 string) {
		tpl, err := Parse("fuzz", src, Options{Fuel: 20_000, Now: func() time.Time { return fixedNow }})
		if err != nil {
			return
		}
		var memo *Memo
		for _, js := range []string{vars1, vars2, vars1} {
			vars, err := VarsFromJSON([]byte(js))
			if err != nil {
				vars = nil
			}
			if m := memoCheck(t, tpl, vars, memo, "fuzz"); m != nil {
				memo = m
			}
		}
	})
}

// TestMemoKeepsOnlyLatestText: records replayed over many turns point into the latest output,
// or are copies, so a conversation's memo never pins the texts of earlier turns.
func TestMemoKeepsOnlyLatestText(t *testing.T) {
	tpl, err := Parse("t", `{% set s %}{% for m in messages %}[{{ m }}]{% endfor %}{% endset %}{% for m in messages %}<{{ m }}>{% endfor %}{{ s }}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	within := func(sub, s string) bool {
		p, lo := uintptr(unsafe.Pointer(unsafe.StringData(sub))), uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return p >= lo && p+uintptr(len(sub)) <= lo+uintptr(len(s))
	}
	var memo *Memo
	var msgs []Value
	var texts []string
	for turn := range 20 {
		msgs = append(msgs, String(strings.Repeat("x", turn+1)))
		text, next, err := tpl.ExecuteMemo(map[string]Value{"messages": List(msgs...)}, memo)
		if err != nil {
			t.Fatal(err)
		}
		memo = next
		replayed := 0
		for _, recs := range memo.loops {
			for i, r := range recs.records() {
				out := memo.out(&r)
				if r.start < 0 && out != "" && !within(out, text) {
					for _, old := range texts {
						if within(out, old) {
							t.Fatalf("turn %d: record %d points into an earlier turn's text", turn, i)
						}
					}
				}
				if strings.HasPrefix(out, "<") {
					if r.start < 0 || !within(out, text) {
						t.Fatalf("turn %d: main-loop record %d does not point into the latest text", turn, i)
					}
					replayed++
				}
			}
		}
		if replayed != len(msgs) {
			t.Fatalf("turn %d: %d main-loop records, want %d", turn, replayed, len(msgs))
		}
		texts = append(texts, text)
	}
}

// TestMemoCommonPrefixSkipsReplays: growing a conversation of long messages, the common prefix
// with the previous output is found without comparing what replayed iterations wrote.
func TestMemoCommonPrefixSkipsReplays(t *testing.T) {
	tpl, err := Parse("t", `<sys>{% for m in messages %}<{{ loop.index }}>{{ m }}{% if loop.last %}!{% endif %}{% endfor %}<gen>`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []Value
	var memo *Memo
	var prevText string
	for turn := range 12 {
		msgs = append(msgs, String(strings.Repeat(string(rune('a'+turn)), 20000)))
		text, next, err := tpl.ExecuteMemo(map[string]Value{"messages": List(msgs...)}, memo)
		if err != nil {
			t.Fatal(err)
		}
		if memo != nil {
			if n, want := next.CommonPrefix(), commonPrefixNaive(prevText, text); n != want {
				t.Fatalf("turn %d: CommonPrefix %d, want %d", turn, n, want)
			}
			// Only the previous last iteration runs again (loop.last changed): its bytes are compared.
			if next.compared > 20000+1000 {
				t.Fatalf("turn %d: %d bytes compared of %d; the replayed iterations were compared", turn, next.compared, len(text))
			}
		}
		memo, prevText = next, text
	}
}

// roleMessage is a chat message {"role": role, "content": content}, as the memo tests' loops read.
func roleMessage(role, content string) Value {
	m := NewMap()
	m.Set("role", String(role))
	m.Set("content", String(content))
	return MapValue(m)
}
