package jinja

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBulkReplayMatchesExecute: templates whose message loops read neighbours (before, after,
// the last one), loop.last and loop.length, namespace values set before the loop, and a loop
// captured by a set block, over random conversations that grow, are edited anywhere, shrink and
// branch from older memos: every memo render equals Execute.
func TestBulkReplayMatchesExecute(t *testing.T) {
	srcs := []string{
		`{%- set ns = namespace(q=-1) %}{%- for m in messages %}{%- if m.role == "user" %}{%- set ns.q = loop.index0 %}{%- endif %}{%- endfor %}` +
			`{%- for m in messages %}<{{ m.role }}{% if loop.index0 > ns.q %}*{% endif %}{% if loop.first or messages[loop.index0 - 1].role != m.role %}^{% endif %}` +
			`{{ m.content }}{% if loop.last or messages[loop.index0 + 1].role != m.role %}${% endif %}>{%- endfor %}{% if add_generation_prompt %}<gen>{% endif %}`,
		`{%- for m in messages %}[{{ loop.index }}/{{ loop.length }}:{{ m.content }}]{%- endfor %}`,
		`{%- for m in messages %}[{{ m.content }}{% if messages[-1].role == "user" %}u{% endif %}]{%- endfor %}`,
		`{%- for m in messages %}[{{ m.content }}{% if messages[0].role == "system" %}s{% endif %}{{ messages[2].content if loop.index0 > 2 else "" }}]{%- endfor %}`,
		`{%- set s %}{%- for m in messages %}({{ m.content }}{% if not loop.last %},{% endif %}){%- endfor %}{%- endset %}{{ s }}|{%- for m in messages %}<{{ m.content }}>{%- endfor %}`,
		`{%- for m in messages %}{%- if loop.index0 == 3 %}{%- break %}{%- endif %}<{{ m.content }}>{%- endfor %}{%- for m in messages %}{%- if m.role == "tool" %}{%- continue %}{%- endif %}({{ m.content }}){%- endfor %}`,
		`{%- for m in messages %}{{ loop.revindex }}{{ loop.previtem.content if loop.previtem else "" }}:{{ m.content }}{{ loop.cycle("a", "b") }};{%- endfor %}`,
		// Comparisons fixed by position (positionalRefs): neighbours two ahead and behind, a
		// negative position (messages[-1] is the last item, which moves), nested subscripts,
		// short-circuits and depth.
		`{%- for m in messages %}<{{ m.content[:3] }}{% if messages[loop.index0 + 2] is defined and messages[loop.index0 + 2].role == "tool" %}+{% endif %}` +
			`{% if messages[loop.index0 - 1].role == "user" %}-{% endif %}{% if messages[loop.index - 2].content[1] != "x" %}!{% endif %}` +
			`{% if loop.first or (messages[loop.index0 - 2].role == m.role and loop.depth0 == 0) %}={% endif %}>{%- endfor %}`,
		// Comparisons taken from the previous execution's check (runCheck) while their operands
		// outside the loop keep their values: with a namespace value, chained, with the loop
		// variable, with a neighbour's item, a subscript by position, a constant.
		`{%- set ns = namespace(q=-1, k=0) %}{%- for m in messages %}{%- if m.role == "user" %}{%- set ns.q = loop.index0 %}{%- endif %}` +
			`{%- if m.role == "tool" %}{%- set ns.k = ns.k + 1 %}{%- endif %}{%- endfor %}{%- set roles = ["user", "tool"] %}` +
			`{%- for m in messages %}<{{ m.content[:2] }}{% if 0 <= loop.index0 - 1 < ns.q %}a{% endif %}{% if m.role == roles[ns.k - 1] %}b{% endif %}` +
			`{% if messages[loop.index0 - 1].role != roles[0] and loop.index0 + ns.k > 4 %}c{% endif %}>{%- endfor %}`,
		// Comparisons of the position with an int outside the loop (intComparison), both ways
		// round, with each operator, and one with a bool (not an int: compared as before).
		`{%- set ns = namespace(q=-1, b=true) %}{%- for m in messages %}{%- if m.role == "user" %}{%- set ns.q = loop.index0 %}{%- endif %}{%- endfor %}` +
			`{%- for m in messages %}<{{ m.content[:2] }}{% if ns.q >= loop.index %}a{% endif %}{% if loop.index0 == ns.q %}b{% endif %}` +
			`{% if loop.index != ns.q %}c{% endif %}{% if loop.index0 <= ns.q %}d{% endif %}{% if ns.q < loop.index0 %}e{% endif %}` +
			`{% if loop.index0 == ns.b %}f{% endif %}{% if loop.index > ns.q %}g{% endif %}>{%- endfor %}`,
		// And ones it cannot take, each alone in its records (a filter, a comparison inside an
		// operand, loop.length, which changes as the conversation grows), evaluated again.
		`{%- for m in messages %}<{{ m.content[:2] }}{% if loop.index0 > messages|length - 3 %}d{% endif %}>{%- endfor %}`,
		`{%- set ns = namespace(q=-1) %}{%- for m in messages %}{%- if m.role == "user" %}{%- set ns.q = loop.index0 %}{%- endif %}{%- endfor %}` +
			`{%- for m in messages %}<{{ m.content[:2] }}{% if add_generation_prompt == (loop.index0 > ns.q) %}e{% endif %}>{%- endfor %}`,
		`{%- for m in messages %}<{{ m.content[:2] }}{% if loop.index0 + 3 > loop.length %}f{% endif %}>{%- endfor %}`,
		// Reads of other outer names, checked once per run: a top-level variable, a macro, a
		// variable that changes between executions (add_generation_prompt) and a subscripted one.
		`{%- set sep = "|" %}{%- set marks = {"user": "u", "tool": "t"} %}{%- macro wrap(x) %}[{{ x[:4] }}]{%- endmacro %}` +
			`{%- for m in messages %}{{ wrap(m.content) }}{{ sep }}{{ marks[m.role] if m.role in marks else "" }}` +
			`{% if add_generation_prompt %}g{% endif %}{%- endfor %}`,
	}
	roles := []string{"system", "user", "assistant", "tool"}
	rng := rand.New(rand.NewPCG(20, 4))
	newMsg := func(step int) Value {
		m := NewMap()
		m.Set("role", String(roles[rng.IntN(len(roles))]))
		m.Set("content", String(fmt.Sprintf("c%d-%s", step, strings.Repeat("x", rng.IntN(300)))))
		return MapValue(m)
	}
	for si, src := range srcs {
		tpl, err := Parse(fmt.Sprint("t", si), src, Options{})
		if err != nil {
			t.Fatalf("template %d: %v", si, err)
		}
		type state struct {
			msgs []Value
			memo *Memo
		}
		states := []state{{}}
		bulk, checked := 0, 0
		for step := range 300 {
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
			case op == 6: // an equal but not identical copy of an earlier message
				i := rng.IntN(len(msgs))
				c := NewMap()
				c.Set("role", String(msgs[i].mapv().vals[0].s))
				c.Set("content", String(strings.Clone(msgs[i].mapv().vals[1].s)))
				msgs[i] = MapValue(c)
			}
			vars := map[string]Value{"messages": List(msgs...), "add_generation_prompt": Bool(rng.IntN(3) != 0)}
			want, wantErr := tpl.Execute(vars)
			got, memo, err := tpl.ExecuteMemo(vars, from.memo)
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("template %d step %d: error %v, Execute %v", si, step, err, wantErr)
			}
			if got != want {
				t.Fatalf("template %d step %d: differs from Execute\n%s", si, step, firstDiff(got, want))
			}
			if err == nil {
				states = append(states, state{msgs, memo})
				bulk += memo.bulk
				checked += memo.checked
			}
		}
		// loop.length, revindex, previtem and cycle depend on more than the
		// position, and a filter of messages reads all of it: those records are checked one by
		// one.
		if want := si != 1 && si != 6 && si != 10; (bulk > 0) != want {
			t.Errorf("template %d: %d records replayed in bulk", si, bulk)
		}
		// Templates 0, 8 and 9 compare with namespace values, which often stay.
		if want := si == 0 || si == 8 || si == 9; want && checked == 0 {
			t.Errorf("template %d: no comparison taken from the previous check", si)
		}
	}
}

// TestBulkReplayQwen3: growing an agent conversation by a tool round or a user nudge, the
// Qwen3 template's message loop replays all but the last few records in one run.
func TestBulkReplayQwen3(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(goldenDir, "templates", "qwen3.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Parse("qwen3", string(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, nudge := range []bool{false, true} {
		msgs := agentConversation(20, 500, nudge)
		var memo *Memo
		for k := 2; k <= len(msgs); k++ {
			vars := map[string]Value{"messages": List(msgs[:k]...), "add_generation_prompt": Bool(true)}
			text, next, err := tpl.ExecuteMemo(vars, memo)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := tpl.Execute(vars); text != want {
				t.Fatalf("nudge %v, %d messages: differs from Execute\n%s", nudge, k, firstDiff(text, want))
			}
			if memo != nil && k > 8 && next.bulk < k-4 {
				t.Fatalf("nudge %v, %d messages: bulk replay took %d records", nudge, k, next.bulk)
			}
			checked += next.checked
			memo = next
		}
	}
	// The assistant records compare loop.index0 with ns.last_query_index, which stays while no
	// user message comes: the previous check's results are taken.
	if checked == 0 {
		t.Error("no comparison was taken from the previous check")
	}
}

// TestSameItem: sameItem agrees with sameValue on the items a loop meets, the shortcut for the
// very same map included, and a namespace or loop object is never the same, even as itself.
func TestSameItem(t *testing.T) {
	msg := NewMap()
	msg.Set("role", String("user"))
	msg.Set("content", String("hi"))
	twin := NewMap()
	twin.Set("role", String("user"))
	twin.Set("content", String("hi"))
	other := NewMap()
	other.Set("role", String("user"))
	list := List(String("a"))
	ns := Value{k: kNamespace, o: NewMap()}
	lo := Value{k: kLoop, o: &loopObj{}}
	for _, tc := range []struct {
		name string
		a, b Value
		want bool
	}{
		{"same map", MapValue(msg), MapValue(msg), true},
		{"equal map", MapValue(msg), MapValue(twin), true},
		{"other map", MapValue(msg), MapValue(other), false},
		{"same list", list, list, true},
		{"string", String("x"), String("x"), true},
		{"map and string", MapValue(msg), String("x"), false},
		{"namespace itself", ns, ns, false},
		{"loop itself", lo, lo, false},
	} {
		if got, want := sameItem(tc.a, tc.b), sameValue(tc.a, tc.b); got != want || got != tc.want {
			t.Errorf("%s: sameItem %v, sameValue %v, want %v", tc.name, got, want, tc.want)
		}
	}
}
