package jinja

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// itemExprTemplates compare the loop variable with outer values, also where the same name means
// something else (a macro's outer variable, a rebinding in the body, a nested loop).
var itemExprTemplates = []string{
	// Mistral Nemo's shape.
	`{%- set users = messages | selectattr("role", "equalto", "user") | list %}` +
		`{%- for m in messages %}{% if m.role == "user" %}{% if tools is not none and (m == users[-1]) %}[T]{% endif %}` +
		`{% if loop.last and sys is defined %}{{ sys }}{% endif %}{% endif %}<{{ m.role }}>{{ m.content }}{% endfor %}`,
	// A macro reading a top-level variable of the loop variable's name.
	`{%- set m = messages[0] if messages else none %}{% macro f() %}{{ m == messages[-1] }}{% endmacro %}` +
		`{%- for m in messages %}{{ f() }}{{ m == messages[-1] }}{{ m.content > "m" }};{% endfor %}`,
	// The body rebinds the loop variable, then compares it.
	`{%- for m in messages %}{% if m.role == "tool" %}{% set m = m.content %}{% endif %}{{ m == messages[-1].content }}{{ m != messages[0] }};{% endfor %}`,
	// A nested loop binding the same name, and a comparison chain with the item in the middle.
	`{%- for m in messages %}{% for m in [m.content] %}{{ m == messages[-1].content }}{% endfor %}` +
		`{{ messages[0] == m == messages[-1] }}{{ loop.index0 < 3 and m.role == messages[loop.index0].role }};{% endfor %}`,
	// Tuple targets have no item name.
	// Operands bulkReplay evaluates itself (fixedOperands): names and attributes.
	`{%- set users = messages | selectattr("role", "equalto", "user") | list %}{% set last = users[-1] if users else none %}` +
		`{%- for m in messages %}{% if m == last %}[T]{% endif %}{% if m.content == last.content %}={% endif %}<{{ m.role }}>{{ m.content }}{% endfor %}`,
	`{%- for role, content in pairs %}{{ role == messages[-1].role }}{{ content == messages[0].content }};{% endfor %}`,
}

// TestMemoItemComparisonsMatchExecute grows, branches, edits and copies conversations through
// the templates above: every output (or error) must equal a plain Execute's.
func TestMemoItemComparisonsMatchExecute(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 7))
	msg := func() Value {
		m := NewMap()
		m.Set("role", String([]string{"user", "assistant", "tool"}[rng.IntN(3)]))
		m.Set("content", String(fmt.Sprintf("%c", 'a'+rng.IntN(26))))
		return MapValue(m)
	}
	for ti, src := range itemExprTemplates {
		tpl, err := Parse("t", src, Options{})
		if err != nil {
			t.Fatalf("template %d: %v", ti, err)
		}
		for conv := range 30 {
			grow := func() []Value { return []Value{msg()} }
			memoWalk(t, rng, tpl, grow, msg, func(msgs []Value) map[string]Value {
				pairs := make([]Value, len(msgs))
				for i, m := range msgs {
					role, _ := m.mapv().getStr("role")
					content, _ := m.mapv().getStr("content")
					pairs[i] = tuple(role, content)
				}
				vars := map[string]Value{"messages": List(msgs...), "pairs": List(pairs...)}
				if rng.IntN(4) != 0 {
					vars["tools"] = List(String("t"))
				}
				if rng.IntN(2) == 0 {
					vars["sys"] = String("S")
				}
				return vars
			}, fmt.Sprintf("template %d conversation %d", ti, conv))
		}
	}
}

// TestMemoItemComparisonReplays checks that a new user message runs again only the iterations
// whose output changes (the previous last user message, the new one), not every user message's.
func TestMemoItemComparisonReplays(t *testing.T) {
	tpl, err := Parse("t", itemExprTemplates[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	vars := func(msgs []Value) map[string]Value {
		return map[string]Value{"messages": List(msgs...), "tools": List(String("t"))}
	}
	var msgs []Value
	for i := range 10 {
		msgs = append(msgs, roleMessage("user", fmt.Sprint("u", i)), roleMessage("assistant", fmt.Sprint("a", i)))
	}
	memo := memoCheck(t, tpl, vars(msgs), nil, "first")
	msgs = append(msgs, roleMessage("user", "new"))
	next := memoCheck(t, tpl, vars(msgs), memo, "new user message")
	recs, prev := mainLoopRecords(next), mainLoopRecords(memo)
	for i := range prev {
		ran := len(recs[i].exprReads()) > 0 && &recs[i].exprReads()[0] != &prev[i].exprReads()[0]
		if want := i == 18; ran != want {
			t.Errorf("record %d: ran again %v, want %v", i, ran, want)
		}
	}
	if next.bulk < 18 {
		t.Errorf("%d records replayed in bulk, want at least 18", next.bulk)
	}
	// A new last user message equal to an earlier one: == holds for both, so the tools block goes
	// before each (Jinja compares values), and that earlier record must not replay in bulk.
	msgs = []Value{roleMessage("user", "x"), roleMessage("assistant", "1"), roleMessage("user", "y"), roleMessage("assistant", "2"), roleMessage("user", "z"), roleMessage("assistant", "3")}
	for _, src := range itemExprTemplates[:2] {
		tpl, err := Parse("t", src, Options{})
		if err != nil {
			t.Fatal(err)
		}
		memo = memoCheck(t, tpl, vars(msgs), nil, "x y z")
		memoCheck(t, tpl, vars(append(msgs, roleMessage("user", "y"))), memo, "x y z y")
	}
}

// mainLoopRecords returns the records of the memo's loop over a name.
func mainLoopRecords(m *Memo) []iterRecord {
	for n, recs := range m.loops {
		if _, ok := n.iter.(*nameExpr); ok {
			return recs.records()
		}
	}
	return nil
}
