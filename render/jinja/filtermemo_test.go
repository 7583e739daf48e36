package jinja

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// filterChainTemplates derive lists with chains of per-item filters (filtermemo.go), loop over
// them, and read them afterwards, as Mistral Nemo's template does.
var filterChainTemplates = []string{
	// Mistral Nemo's shape: the user messages, then the role alternation check over a chain.
	`{%- set user_messages = messages | selectattr("role", "equalto", "user") | list %}` +
		`{%- for m in messages | rejectattr("role", "equalto", "tool") | selectattr("tool_calls", "undefined") %}` +
		`{%- if (m["role"] == "user") != (loop.index0 % 2 == 0) %}{{ raise_exception("roles must alternate") }}{% endif %}` +
		`{%- endfor %}` +
		`{%- for m in messages %}{% if m.role == "user" and m == user_messages[-1] %}[T]{% endif %}<{{ m.role }}>{{ m.content }}{% endfor %}`,
	// Every per-item filter, a loop over a chain reading its loop object and an outer name.
	`{%- for m in messages | reject("none") | selectattr("content") | rejectattr("role", "in", ["system"]) %}` +
		`{{ loop.index }}/{{ loop.length }}{{ m.role }}{% if loop.last %}!{{ messages | length }}{% endif %};` +
		`{%- endfor %}{{ messages | select | list | length }}`,
	// A comparison test that fails on some items (an int content against a string).
	`{%- for m in messages | selectattr("content", "gt", "m") %}{{ m.content }},{% endfor %}`,
	// The same chain twice, and one nested in an expression.
	`{{ (messages | selectattr("role", "equalto", "user") | list | length) + (messages | selectattr("role", "equalto", "user") | list | length) }}` +
		`{%- for m in messages | selectattr("role", "sameas", "user") %}{{ loop.first }}{{ m.content }}{% endfor %}`,
	// A chain of a name that is not always a list.
	`{%- for x in items | select %}{{ x }}{% endfor %}{{ items | reject | list }}`,
}

// TestMemoFilterChainsMatchExecute grows conversations through ExecuteMemo, branches them, edits
// and copies earlier messages and changes the kind of what a chain filters: every output (or
// error) must equal a plain Execute's.
func TestMemoFilterChainsMatchExecute(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 9))
	msg := func(role string, content Value, toolCalls bool) Value {
		m := NewMap()
		m.Set("role", String(role))
		m.Set("content", content)
		if toolCalls {
			m.Set("tool_calls", List(String("call")))
		}
		return MapValue(m)
	}
	randomMsg := func() Value {
		roles := []string{"user", "assistant", "tool", "system"}
		var content Value
		switch rng.IntN(6) {
		case 0:
			content = String("")
		case 1:
			content = Int(int64(rng.IntN(3)))
		default:
			content = String(fmt.Sprintf("%c%d", 'a'+rng.IntN(26), rng.IntN(100)))
		}
		return msg(roles[rng.IntN(len(roles))], content, rng.IntN(5) == 0)
	}
	for ti, src := range filterChainTemplates {
		tpl, err := Parse("t", src, Options{})
		if err != nil {
			t.Fatalf("template %d: %v", ti, err)
		}
		for conv := range 30 {
			grow := func() []Value {
				msgs := make([]Value, 1+rng.IntN(3))
				for i := range msgs {
					msgs[i] = randomMsg()
				}
				return msgs
			}
			memoWalk(t, rng, tpl, grow, randomMsg, func(msgs []Value) map[string]Value {
				vars := map[string]Value{"messages": List(msgs...), "items": List(msgs...)}
				switch rng.IntN(8) {
				case 0:
					vars["items"] = String("ab c")
				case 1:
					vars["items"] = Value{}
				case 2:
					vars["items"] = List(Int(0), Int(2), String(""), None())
				}
				return vars
			}, fmt.Sprintf("template %d conversation %d", ti, conv))
		}
	}
}

// TestMemoFilterChainReuse checks that a growing list is filtered only past what the previous
// execution filtered, and that a loop over a chain is memoized and replayed in bulk.
func TestMemoFilterChainReuse(t *testing.T) {
	tpl, err := Parse("t", filterChainTemplates[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []Value
	var memo *Memo
	for i := range 20 {
		msgs = append(msgs, roleMessage("user", fmt.Sprint("u", i)), roleMessage("assistant", fmt.Sprint("a", i)))
		next := memoCheck(t, tpl, map[string]Value{"messages": List(msgs...)}, memo, fmt.Sprint("turn ", i))
		if len(next.filters) != 2 {
			t.Fatalf("turn %d: %d chains recorded, want 2", i, len(next.filters))
		}
		for _, r := range next.filters {
			if want := len(msgs) - 2; r.known != want {
				t.Fatalf("turn %d: %d verdicts reused, want %d", i, r.known, want)
			}
		}
		var filtered []iterRecord
		for n, recs := range next.loops {
			if _, ok := n.iter.(*filterExpr); ok {
				filtered = recs.records()
			}
		}
		if len(filtered) != len(msgs) {
			t.Fatalf("turn %d: %d records of the loop over a chain, want %d", i, len(filtered), len(msgs))
		}
		memo = next
	}
	if memo.bulk == 0 {
		t.Fatal("no record replayed in bulk")
	}
	// A message that breaks the alternation: the loop over the chain raises, as Execute does.
	msgs = append(msgs, roleMessage("assistant", "again"))
	if _, _, err := tpl.ExecuteMemo(map[string]Value{"messages": List(msgs...)}, memo); err == nil || !strings.Contains(err.Error(), "alternate") {
		t.Fatalf("err = %v, want the alternation error", err)
	}
}
