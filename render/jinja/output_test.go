package jinja

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// sameMemory reports whether b starts at a's first byte (b's text was written in place after a's).
func sameMemory(a, b string) bool {
	return len(a) > 0 && len(b) > 0 && unsafe.StringData(a) == unsafe.StringData(b)
}

// TestMemoOutputSharedInPlace: a conversation that only grows writes each turn's output after the
// previous one in the same memory, including when the generation prompt is the start of the next
// message, and the earlier outputs never change.
func TestMemoOutputSharedInPlace(t *testing.T) {
	tpl, err := Parse("t", `<sys>{% for m in messages %}<|{{ m }}|>{% endfor %}{% if add_generation_prompt %}<|{% endif %}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var memo *Memo
	var msgs []Value
	var texts, copies []string
	shared := 0
	for turn := range 40 {
		msgs = append(msgs, String(strings.Repeat(string(rune('a'+turn%26)), 1+turn*97)))
		vars := map[string]Value{"messages": List(msgs...), "add_generation_prompt": Bool(true)}
		text, next, err := tpl.ExecuteMemo(vars, memo)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := tpl.Execute(vars); text != want {
			t.Fatalf("turn %d: differs from Execute\n%s", turn, firstDiff(text, want))
		}
		if len(texts) > 0 && sameMemory(texts[len(texts)-1], text) {
			shared++
		}
		texts, copies = append(texts, text), append(copies, strings.Clone(text))
		memo = next
	}
	for i := range texts {
		if texts[i] != copies[i] {
			t.Fatalf("turn %d's output changed after later turns", i)
		}
	}
	// A copy gets room in proportion to its length (arenaSpare), so copies are amortized: here,
	// with each message longer than the one before, most continuations still write in place.
	// Under the race detector an output claims an arena's end only at an aligned offset
	// (race_on.go), so this template's odd lengths copy more often: only exactness is checked.
	if claimAlign == 1 && shared < (len(texts)-1)*3/5 {
		t.Fatalf("%d of %d continuations were written in place", shared, len(texts)-1)
	}
}

// TestMemoOutputBranches: continuations of one output that differ from each other (branches,
// edits of an earlier message, the generation prompt replaced, a retry of the same turn), in
// random order and from older outputs too, each equal Execute, and no output ever changes.
func TestMemoOutputBranches(t *testing.T) {
	tpl, err := Parse("t", `<sys>{% for m in messages %}<{{ loop.index }}:{{ m }}>{% if loop.last %}!{% endif %}{% endfor %}{% if add_generation_prompt %}<gen>{% endif %}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type state struct {
		msgs []Value
		memo *Memo
	}
	rng := rand.New(rand.NewPCG(20, 1))
	root := state{}
	states := []state{root}
	var texts, copies []string
	for step := range 400 {
		from := states[rng.IntN(len(states))]
		if rng.IntN(3) == 0 {
			from = states[len(states)-1]
		}
		msgs := append([]Value(nil), from.msgs...)
		switch op := rng.IntN(6); {
		case op < 3 || len(msgs) == 0: // grow
			msgs = append(msgs, String(strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(5000))))
		case op == 3: // edit an earlier message
			msgs[rng.IntN(len(msgs))] = String(fmt.Sprint("edited", step))
		case op == 4: // drop the last one
			msgs = msgs[:len(msgs)-1]
		}
		vars := map[string]Value{"messages": List(msgs...), "add_generation_prompt": Bool(rng.IntN(4) != 0)}
		text, memo, err := tpl.ExecuteMemo(vars, from.memo)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := tpl.Execute(vars); text != want {
			t.Fatalf("step %d: differs from Execute\n%s", step, firstDiff(text, want))
		}
		states = append(states, state{msgs: msgs, memo: memo})
		texts, copies = append(texts, text), append(copies, strings.Clone(text))
	}
	for i := range texts {
		if texts[i] != copies[i] {
			t.Fatalf("step %d's output changed later", i)
		}
	}
}

// TestMemoOutputConcurrentBranches: goroutines continuing the same output at once (the same turn
// retried, or different branches) all get their own correct text; the shared output is intact.
// Run with -race.
func TestMemoOutputConcurrentBranches(t *testing.T) {
	tpl, err := Parse("t", `{% for m in messages %}[{{ m }}]{% endfor %}{% if add_generation_prompt %}[{% endif %}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := []Value{String(strings.Repeat("h", 50000))}
	baseText, memo, err := tpl.ExecuteMemo(map[string]Value{"messages": List(base...), "add_generation_prompt": Bool(true)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	baseCopy := strings.Clone(baseText)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				msgs := append(append([]Value(nil), base...), String(strings.Repeat(fmt.Sprint(g%4), 100+i%3)))
				vars := map[string]Value{"messages": List(msgs...), "add_generation_prompt": Bool(true)}
				text, _, err := tpl.ExecuteMemo(vars, memo)
				if err != nil {
					errs <- err
					return
				}
				kept := strings.Clone(text)
				if want, _ := tpl.Execute(vars); text != want {
					errs <- fmt.Errorf("goroutine %d: differs from Execute", g)
					return
				}
				if text != kept {
					errs <- fmt.Errorf("goroutine %d: output changed under it", g)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if baseText != baseCopy {
		t.Fatal("the shared output changed")
	}
}

// commonLen is the length of the longest common prefix of a and b.
func commonLen(a, b string) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// TestMemoOutputSharesLastCopy: a continuation whose template rewrites the previous output's end
// (the last message marked, as Qwen3 renders the reasoning of the turns after the last query
// only) copies the output to a buffer of its own; the same continuation executed again (a retry,
// a re-preparation) shares that copy instead of copying again, including when the copy was made
// because the arena was full under a claim, while a branch from it copies; every text equals
// Execute, no text changes, and CommonPrefix stays exact.
func TestMemoOutputSharesLastCopy(t *testing.T) {
	tpl, err := Parse("t", `<sys>{% for m in messages %}<{{ m }}{% if loop.last %}!{% endif %}>{% endfor %}{% if add_generation_prompt %}<gen>{% endif %}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(msgs []Value, prev *Memo) (string, *Memo) {
		t.Helper()
		vars := map[string]Value{"messages": List(msgs...), "add_generation_prompt": Bool(true)}
		text, memo, err := tpl.ExecuteMemo(vars, prev)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := tpl.Execute(vars); text != want {
			t.Fatalf("differs from Execute\n%s", firstDiff(text, want))
		}
		if prev != nil && memo.CommonPrefix() != commonLen(text, prev.text) {
			t.Fatalf("CommonPrefix %d, want %d", memo.CommonPrefix(), commonLen(text, prev.text))
		}
		return text, memo
	}
	msgs := []Value{String(strings.Repeat("h", 40000))}
	prevText, prev := run(msgs, nil)
	prevCopy := strings.Clone(prevText)
	next := append(append([]Value(nil), msgs...), String(strings.Repeat("n", 300)))
	first, _ := run(next, prev)
	if sameMemory(first, prevText) {
		t.Fatal("a continuation that rewrites the last message shares the previous output's memory")
	}
	firstCopy := strings.Clone(first)
	again, _ := run(next, prev)
	if !sameMemory(again, first) {
		t.Fatal("the same continuation again copied the history instead of sharing the first's copy")
	}
	branch := append(append([]Value(nil), msgs...), String(strings.Repeat("b", 300)))
	other, _ := run(branch, prev)
	if sameMemory(other, first) || sameMemory(other, prevText) {
		t.Fatal("a branch shares another continuation's memory")
	}
	// The branch is now the last copy: the first continuation copies again.
	back, _ := run(next, prev)
	if back != firstCopy {
		t.Fatal("back to the first continuation: wrong text")
	}
	if prevText != prevCopy || first != firstCopy || again != firstCopy {
		t.Fatal("an output changed")
	}

	// A continuation that appends (no rewrite) beyond the arena's room: its claim fills the
	// arena, it copies, and the same continuation again shares that copy.
	tplAppend, err := Parse("t", `{% for m in messages %}<{{ m }}>{% endfor %}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	vars := func(msgs ...Value) map[string]Value { return map[string]Value{"messages": List(msgs...)} }
	h := String(strings.Repeat("h", 40000))
	_, m0, err := tplAppend.ExecuteMemo(vars(h), nil)
	if err != nil {
		t.Fatal(err)
	}
	big := []Value{h, String("small"), String(strings.Repeat("x", 200000))}
	t1, _, err := tplAppend.ExecuteMemo(vars(big...), m0)
	if err != nil {
		t.Fatal(err)
	}
	t2, _, err := tplAppend.ExecuteMemo(vars(big...), m0)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := tplAppend.Execute(vars(big...)); t1 != want || t2 != want {
		t.Fatal("differs from Execute")
	}
	if !sameMemory(t1, t2) {
		t.Fatal("the same full continuation again copied instead of sharing the first's copy")
	}
}

// TestMemoOutputConcurrentCopies: goroutines executing the same rewriting continuation, and a
// branch of it, from one memo at once each get the right text, which never changes (run with
// -race).
func TestMemoOutputConcurrentCopies(t *testing.T) {
	tpl, err := Parse("t", `{% for m in messages %}[{{ m }}{% if loop.last %}!{% endif %}]{% endfor %}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := []Value{String(strings.Repeat("h", 30000))}
	_, memo, err := tpl.ExecuteMemo(map[string]Value{"messages": List(base...)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				last := strings.Repeat("n", 100+i%2)
				if g == 0 {
					last = strings.Repeat("b", 100+i%2)
				}
				vars := map[string]Value{"messages": List(append(append([]Value(nil), base...), String(last))...)}
				text, _, err := tpl.ExecuteMemo(vars, memo)
				if err != nil {
					errs <- err
					return
				}
				kept := strings.Clone(text)
				if want, _ := tpl.Execute(vars); text != want {
					errs <- fmt.Errorf("goroutine %d: differs from Execute", g)
					return
				}
				if text != kept {
					errs <- fmt.Errorf("goroutine %d: output changed under it", g)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
