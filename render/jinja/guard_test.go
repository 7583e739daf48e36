package jinja

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unguarded parses source with every loop guard removed: the plain semantics the cut must match.
func unguarded(t *testing.T, name, source string, opts Options) *Template {
	t.Helper()
	tpl, err := Parse(name, source, opts)
	if err != nil {
		t.Fatal(err)
	}
	walkStatements(tpl.body, func(n node) {
		if f, ok := n.(*forNode); ok {
			f.guard = nil
		}
	})
	return tpl
}

func guardCount(tpl *Template) int {
	n := 0
	walkStatements(tpl.body, func(s node) {
		if f, ok := s.(*forNode); ok && f.guard != nil {
			n++
		}
	})
	return n
}

// TestTailGuardShapes: which loops may end early. Only a body of sets then one if whose first
// conjunct reads nothing the iteration binds qualifies.
func TestTailGuardShapes(t *testing.T) {
	const scan = `{%- for message in messages[::-1] %}{%- set index = (messages|length - 1) - loop.index0 %}{%- if COND %}{%- set ns.flag = false %}{%- set ns.at = index %}{%- endif %}{%- endfor %}`
	cases := []struct {
		name, src string
		want      bool
	}{
		{"qwen3 scan", strings.Replace(scan, "COND", `ns.flag and message.role == "user"`, 1), true},
		{"guard alone", strings.Replace(scan, "COND", `ns.flag`, 1), true},
		{"not guard", strings.Replace(scan, "COND", `not ns.done and message.role == "user"`, 1), true},
		{"loop variable first", strings.Replace(scan, "COND", `message.role == "user" and ns.flag`, 1), false},
		{"loop attribute guard", strings.Replace(scan, "COND", `loop.first and ns.flag`, 1), false},
		{"local guard", strings.Replace(scan, "COND", `index and ns.flag`, 1), false},
		{"or", strings.Replace(scan, "COND", `ns.flag or message.role == "user"`, 1), false},
		{"variable subscript", strings.Replace(scan, "COND", `messages[index].x and ns.flag`, 1), false},
		{"else", `{%- for m in messages %}{%- if ns.flag %}x{%- else %}y{%- endif %}{%- endfor %}`, false},
		{"elif", `{%- for m in messages %}{%- if ns.flag %}x{%- elif m %}y{%- endif %}{%- endfor %}`, false},
		{"output", `{%- for m in messages %}{{ m }}{%- if ns.flag %}x{%- endif %}{%- endfor %}`, false},
		{"text", `{%- for m in messages %}a{%- if ns.flag %}x{%- endif %}{%- endfor %}`, false},
		{"call in set", `{%- for m in messages %}{%- set x = f() %}{%- if ns.flag %}x{%- endif %}{%- endfor %}`, false},
		{"division in set", `{%- for m in messages %}{%- set x = 1 / loop.index0 %}{%- if ns.flag %}x{%- endif %}{%- endfor %}`, false},
		{"loop variable in set", `{%- for m in messages %}{%- set x = m.role %}{%- if ns.flag %}x{%- endif %}{%- endfor %}`, false},
		{"filter", `{%- for m in messages if m %}{%- if ns.flag %}x{%- endif %}{%- endfor %}`, false},
		{"namespace set before if", `{%- for m in messages %}{%- set ns.flag = true %}{%- if ns.flag %}x{%- endif %}{%- endfor %}`, false},
		{"statement after if", `{%- for m in messages %}{%- if ns.flag %}x{%- endif %}{%- set y = 1 %}{%- endfor %}`, false},
		{"tuple target", `{%- for a, b in pairs %}{%- if ns.flag %}x{%- endif %}{%- endfor %}`, false},
		{"recursive", `{%- for m in messages recursive %}{%- if ns.flag %}x{%- endif %}{%- endfor %}`, false},
		{"name set in the if", `{%- for m in messages %}{%- if flag %}{%- set flag = 1 %}{%- endif %}{%- endfor %}`, false},
	}
	for _, c := range cases {
		tpl, err := Parse(c.name, c.src, Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := guardCount(tpl) == 1; got != c.want {
			t.Errorf("%s: guarded = %v, want %v", c.name, got, c.want)
		}
	}
	src, err := os.ReadFile(filepath.Join(goldenDir, "templates", "qwen3.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Parse("qwen3", string(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := guardCount(tpl); n != 1 {
		t.Errorf("qwen3.jinja: %d guarded loops, want 1 (the last-query scan)", n)
	}
}

// TestTailGuardMatchesFullLoop renders every real template and a set of loops of the guarded
// shape over random conversations, with and without the cut: outputs and errors must be equal.
func TestTailGuardMatchesFullLoop(t *testing.T) {
	type tplPair struct {
		name          string
		cut, full     *Template
		needsMessages bool
	}
	opts := Options{Now: func() time.Time { return fixedNow }, Fuel: 50_000_000}
	var pairs []tplPair
	files, err := filepath.Glob(filepath.Join(goldenDir, "templates", "*.jinja"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	guarded := 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(file)
		cut, err := Parse(name, string(src), opts)
		if err != nil {
			t.Fatal(err)
		}
		guarded += guardCount(cut)
		pairs = append(pairs, tplPair{name, cut, unguarded(t, name, string(src), opts), true})
	}
	if guarded == 0 {
		t.Fatal("no real template has a guarded loop")
	}
	// Synthetic scans: guards of several forms, sets that fail (a string's length minus an
	// int; the length of an int), guards that are undefined or change type, output in the if.
	synth := []string{
		`{%- set ns = namespace(flag=true, at=-1) %}{%- for m in messages[::-1] %}{%- set i = (messages|length - 1) - loop.index0 %}{%- if ns.flag and m.role == "user" %}{%- set ns.flag = false %}{%- set ns.at = i %}{%- endif %}{%- endfor %}{{ ns.at }}`,
		`{%- set ns = namespace(done=false, n=0) %}{%- for m in messages %}{%- set a = loop.index + 1 %}{%- set b = a - loop.revindex0 %}{%- if not ns.done and m.role != "tool" %}[{{ b }}{{ m.role }}]{%- set ns.n = ns.n + 1 %}{%- if ns.n > 1 %}{%- set ns.done = true %}{%- endif %}{%- endif %}{%- endfor %}{{ ns.n }}`,
		// A backwards scan read from the end of the list (reversedItems), with the loop's items
		// and positions in the if.
		`{%- set ns = namespace(flag=true) %}{%- for m in messages[::-1] %}{%- set i = loop.revindex0 %}{%- if ns.flag and m.role != "tool" %}` +
			`[{{ i }}{{ loop.index }}/{{ loop.length }}{{ loop.previtem.role if loop.previtem is defined else "-" }}{{ loop.nextitem.role if loop.nextitem is defined else "-" }}{{ m.role }}]` +
			`{%- if m.role == "user" %}{%- set ns.flag = false %}{%- endif %}{%- endif %}{%- endfor %}`,
		`{%- set ns = namespace(flag=true) %}{%- for m in messages %}{%- set x = label|length - loop.index0 %}{%- if ns.flag and m.role == "assistant" %}{{ x }}{%- set ns.flag = false %}{%- endif %}{%- endfor %}`,
		`{%- set ns = namespace(flag=true) %}{%- for m in messages %}{%- set x = count|length %}{%- if ns.flag %}{%- set ns.flag = m.role == "user" %}{%- endif %}{%- endfor %}.`,
		`{%- set ns = namespace(flag=true) %}{%- for m in messages %}{%- set x = label + loop.index0 %}{%- if ns.flag %}{%- set ns.flag = false %}{%- endif %}{%- endfor %}.`,
		`{%- set ns = namespace(flag=1) %}{%- for m in messages %}{%- if ns.flag and m.role == "user" %}{{ loop.index0 }}{%- set ns.flag = ns.flag - 1 %}{%- endif %}{%- endfor %}`,
		`{%- set ns = namespace(flag=true) %}{%- for m in messages %}{%- if ns.missing.deeper and m %}x{%- endif %}{%- endfor %}.`,
		`{%- set ns = namespace(flag=true) %}{%- for m in messages %}{%- if ns.flag %}{%- if m.role == "tool" %}{%- break %}{%- endif %}{%- set ns.flag = m.role != "user" %}{%- endif %}{%- else %}empty{%- endfor %}{{ ns.flag }}`,
		`{%- set ns = namespace(flag=true) %}{%- for m in messages %}{%- if ns.flag %}{%- set ns.flag = m.role != "user" %}{%- continue %}{%- endif %}{%- else %}all-continued{%- endfor %}{{ ns.flag }}`,
	}
	for i, src := range synth {
		name := fmt.Sprintf("synthetic%d", i)
		cut, err := Parse(name, src, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if guardCount(cut) != 1 {
			t.Fatalf("%s: not guarded", name)
		}
		pairs = append(pairs, tplPair{name, cut, unguarded(t, name, src, opts), false})
	}
	rng := rand.New(rand.NewPCG(20, 3))
	roles := []string{"system", "user", "assistant", "tool"}
	for round := range 300 {
		n := rng.IntN(12)
		msgs := make([]Value, n)
		for i := range msgs {
			m := NewMap()
			role := roles[rng.IntN(len(roles))]
			m.Set("role", String(role))
			content := fmt.Sprintf("message %d", i)
			if role == "user" && rng.IntN(3) == 0 {
				content = "<tool_response>\nout\n</tool_response>"
			}
			m.Set("content", String(content))
			if role == "assistant" && rng.IntN(2) == 0 {
				m.Set("reasoning_content", String("thought"))
			}
			msgs[i] = MapValue(m)
		}
		vars := map[string]Value{
			"messages": List(msgs...), "add_generation_prompt": Bool(rng.IntN(2) == 0),
			"label": String("lbl"), "count": Int(int64(rng.IntN(3))),
		}
		if rng.IntN(4) == 0 {
			vars["label"] = Int(3)
		}
		for _, p := range pairs {
			if p.needsMessages && n == 0 {
				continue
			}
			want, wantErr := p.full.Execute(vars)
			got, err := p.cut.Execute(vars)
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("round %d %s: error %v, without the cut %v", round, p.name, err, wantErr)
			}
			if got != want {
				t.Fatalf("round %d %s: output differs from the full loop\n%s", round, p.name, firstDiff(got, want))
			}
		}
	}
}

// TestTailGuardMemoMatchesFullLoop: with ExecuteMemo, iterations whose item is known not to pass
// the guarded if are skipped; over random conversations that grow, get edited (in place, or by
// an equal copy), shrink and branch from older memos, every render equals the template without
// guards, and the Qwen3 scan skips the history it has seen.
func TestTailGuardMemoMatchesFullLoop(t *testing.T) {
	opts := Options{Now: func() time.Time { return fixedNow }, Fuel: 50_000_000}
	src, err := os.ReadFile(filepath.Join(goldenDir, "templates", "qwen3.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string]string{
		"qwen3": string(src),
		"scan": `{%- set ns = namespace(flag=true, at=-1, n=0) %}{%- for m in messages[::-1] %}{%- set i = (messages|length - 1) - loop.index0 %}` +
			`{%- if ns.flag and m.role == "user" and not (m.content.startswith("<tool") and m.content.endswith(">")) %}{%- set ns.flag = false %}{%- set ns.at = i %}{%- endif %}{%- endfor %}{{ ns.at }}`,
		"count":           `{%- set ns = namespace(go=true, n=0) %}{%- for m in messages[:] %}{%- if ns.go and m.content.count("x") > 2 %}{{ loop.index0 }},{%- set ns.n = ns.n + 1 %}{%- if ns.n > 2 %}{%- set ns.go = false %}{%- endif %}{%- endif %}{%- endfor %}.`,
		"error":           `{%- set ns = namespace(go=true) %}{%- for m in messages[::-1] %}{%- if ns.go and (m.content ~ "").startswith("e") and m.bad.startswith("x") %}!{%- endif %}{%- endfor %}.`,
		"method on a map": `{%- set ns = namespace(go=true) %}{%- for m in messages[::-1] %}{%- if ns.go and m.startswith("x") %}!{%- endif %}{%- endfor %}.`,
	}
	roles := []string{"system", "user", "assistant", "tool"}
	rng := rand.New(rand.NewPCG(20, 9))
	newMsg := func(step int) Value {
		m := NewMap()
		m.Set("role", String(roles[rng.IntN(len(roles))]))
		content := fmt.Sprintf("m%d%s", step, strings.Repeat("x", rng.IntN(5)))
		switch rng.IntN(4) {
		case 0:
			content = "<tool_response>" + content + "</tool_response>"
		case 1:
			content = "e" + content
		}
		m.Set("content", String(content))
		return MapValue(m)
	}
	for name, src := range srcs {
		cut, err := Parse(name, src, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		full := unguarded(t, name, src, opts)
		type state struct {
			msgs []Value
			memo *Memo
		}
		states := []state{{}}
		skipped := 0
		for step := range 250 {
			from := states[len(states)-1]
			if rng.IntN(4) == 0 {
				from = states[rng.IntN(len(states))]
			}
			msgs := append([]Value(nil), from.msgs...)
			switch op := rng.IntN(8); {
			case op < 4 || len(msgs) == 0:
				for range 1 + rng.IntN(3) {
					msgs = append(msgs, newMsg(step))
				}
			case op == 4:
				msgs[rng.IntN(len(msgs))] = newMsg(step)
			case op == 5:
				msgs = msgs[:rng.IntN(len(msgs))]
			case op == 6:
				i := rng.IntN(len(msgs))
				c := NewMap()
				mv := msgs[i].mapv()
				for j := range mv.keys {
					c.Set(mv.keys[j].s, mv.vals[j])
				}
				msgs[i] = MapValue(c)
			}
			if name == "qwen3" && len(msgs) == 0 {
				continue
			}
			vars := map[string]Value{"messages": List(msgs...), "add_generation_prompt": Bool(true)}
			want, wantErr := full.Execute(vars)
			got, memo, err := cut.ExecuteMemo(vars, from.memo)
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("%s step %d: error %v, without guards %v", name, step, err, wantErr)
			}
			if got != want {
				t.Fatalf("%s step %d: differs from the template without guards\n%s", name, step, firstDiff(got, want))
			}
			if err == nil {
				states = append(states, state{msgs, memo})
				skipped += memo.skipped
			}
		}
		if want := name != "method on a map"; (skipped > 0) != want {
			t.Errorf("%s: %d iterations skipped", name, skipped)
		}
	}
}

// TestReversedItemsFuel: a guarded loop over name[::-1] reads the list from its end
// (reversedItems) and charges the fuel evaluating the slice would have, and leaves to that
// evaluation whatever it would do otherwise.
func TestReversedItemsFuel(t *testing.T) {
	msgs := List(String("a"), String("b"), String("c"), String("d"), String("e"))
	var many []Value
	for i := range 23 {
		many = append(many, Int(int64(i)))
	}
	for _, tc := range []struct {
		iter string
		v    Value
		fuel int
		ok   bool
	}{
		{"messages[::-1]", msgs, 1000, true},
		{"messages[::-1]", List(many...), 1000, true},
		{"messages[::-(1)]", msgs, 1000, true},
		{"messages[::-1]", tuple(msgs.list()...), 1000, true},
		{"messages[::-1]", msgs, 2, false},             // the slice would run out of fuel
		{"messages[::-1]", String("abc"), 1000, false}, // a string's characters
		{"messages[::-2]", msgs, 1000, false},
		{"messages[1::-1]", msgs, 1000, false},
	} {
		tpl, err := Parse("t", `{%- set ns = namespace(flag=true) %}{%- for m in `+tc.iter+` %}{%- if ns.flag and m == "c" %}{%- set ns.flag = false %}{%- endif %}{%- endfor %}`, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var loop *forNode
		walkStatements(tpl.body, func(n node) {
			if f, ok := n.(*forNode); ok {
				loop = f
			}
		})
		if loop == nil || loop.guard == nil {
			t.Fatalf("%s: no guarded loop", tc.iter)
		}
		f := &frame{user: map[string]Value{"messages": tc.v}}
		lazy := &evaluator{t: tpl, fuel: tc.fuel}
		items, ok := lazy.reversedItems(loop, f)
		if ok != tc.ok {
			t.Fatalf("%s over %s: reversedItems ok %v, want %v", tc.iter, tc.v.typeName(), ok, tc.ok)
		}
		if !ok {
			if lazy.fuel != tc.fuel {
				t.Fatalf("%s: fuel charged without reading the items", tc.iter)
			}
			continue
		}
		plain := &evaluator{t: tpl, fuel: tc.fuel}
		v, err := plain.eval(loop.iter, f)
		if err != nil {
			t.Fatal(err)
		}
		lo := &loopObj{items: items, rev: true, length: len(items)}
		for i, want := range v.list() {
			if got := lo.item(i); !sameValue(got, want) {
				t.Fatalf("%s: item %d = %v, want %v", tc.iter, i, got, want)
			}
		}
		if lazy.fuel != plain.fuel {
			t.Fatalf("%s: fuel left %d, evaluating the slice leaves %d", tc.iter, lazy.fuel, plain.fuel)
		}
	}
}
