package jinja

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"unsafe"
)

// sameRecords reports whether a and b are the same records (items by identity, details by
// pointer).
func sameRecords(a, b []iterRecord) bool {
	return slices.EqualFunc(a, b, func(x, y iterRecord) bool {
		return identical(x.item, y.item) && x.start == y.start && x.end == y.end && x.detail == y.detail &&
			x.ok == y.ok && x.ctl == y.ctl && x.cls == y.cls && x.refMax == y.refMax
	})
}

// within reports whether r lies in one of l's segments.
func within(r *iterRecord, l recordList) bool {
	p := uintptr(unsafe.Pointer(r))
	for _, s := range l.segs {
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
		if p >= lo && p < lo+uintptr(len(s))*unsafe.Sizeof(iterRecord{}) {
			return true
		}
	}
	return false
}

// TestMemoRecordsShared: a conversation's records are shared from one memo to the next
// (records.go): over a long conversation few records are copied, the segments stay few, no memo's
// records ever change (branches from earlier turns included), and every output equals Execute.
func TestMemoRecordsShared(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"replayed", `{% for m in messages %}<{{ m }}>{% endfor %}{% if add_generation_prompt %}<gen>{% endif %}`},
		// The last record runs again each turn (loop.last changed).
		{"last", `{% for m in messages %}<{{ m }}{% if loop.last %}!{% endif %}>{% endfor %}<gen>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl, err := Parse("t", tc.src, Options{})
			if err != nil {
				t.Fatal(err)
			}
			vars := func(msgs []Value) map[string]Value {
				return map[string]Value{"messages": List(msgs...), "add_generation_prompt": Bool(true)}
			}
			const turns = 200
			var msgs []Value
			var memos []*Memo
			var snapshots [][]iterRecord
			var memo *Memo
			copied := 0
			for turn := range turns {
				for i := range 1 + turn%3 {
					msgs = append(msgs, String(fmt.Sprint("m", turn, ".", i)))
				}
				next := memoCheck(t, tpl, vars(msgs), memo, fmt.Sprint("turn ", turn))
				l := next.loops[mainLoop(next)]
				if l.n != len(msgs) {
					t.Fatalf("turn %d: %d records, want %d", turn, l.n, len(msgs))
				}
				if limit := 1 + l.n/recordSegment; len(l.segs) > limit {
					t.Fatalf("turn %d: %d segments for %d records, want at most %d", turn, len(l.segs), l.n, limit)
				}
				if memo != nil {
					prev := memo.loops[mainLoop(memo)]
					for i := range l.n {
						if !within(l.at(i), prev) {
							copied++
						}
					}
				}
				memo = next
				memos, snapshots = append(memos, next), append(snapshots, mainLoopRecords(next))
			}
			// A copy of every record each turn would be about turns²; sharing, at most a short
			// segment and the turn's own records.
			if limit := turns * (recordSegment + 3); copied > limit {
				t.Fatalf("%d records copied over %d turns, want at most %d", copied, turns, limit)
			}
			for i := range memos {
				branch := append(slices.Clone(msgs[:memos[i].loops[mainLoop(memos[i])].n]), String("branch"))
				memoCheck(t, tpl, vars(branch), memos[i], fmt.Sprint("branch from turn ", i))
			}
			for i, m := range memos {
				if !sameRecords(mainLoopRecords(m), snapshots[i]) {
					t.Fatalf("turn %d's records changed later", i)
				}
			}
		})
	}
}

// mainLoop returns the memo's loop over a name.
func mainLoop(m *Memo) *forNode {
	for n := range m.loops {
		if _, ok := n.iter.(*nameExpr); ok {
			return n
		}
	}
	return nil
}

// TestMemoRecordsConcurrentContinuations: goroutines continuing the same memo at once (the same
// turn retried, or different branches) each get correct outputs over several turns, sharing the
// memo's records, which never change. Run with -race.
func TestMemoRecordsConcurrentContinuations(t *testing.T) {
	tpl, err := Parse("t", `{% for m in messages %}<{{ m }}>{% endfor %}{% if add_generation_prompt %}<gen>{% endif %}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	vars := func(msgs []Value) map[string]Value {
		return map[string]Value{"messages": List(msgs...), "add_generation_prompt": Bool(true)}
	}
	var base []Value
	for i := range 40 {
		base = append(base, String(fmt.Sprint("h", i)))
	}
	want, err := tpl.Execute(vars(base))
	if err != nil {
		t.Fatal(err)
	}
	_, memo, err := tpl.ExecuteMemo(vars(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := mainLoopRecords(memo)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs, prev := slices.Clone(base), memo
			for turn := range 6 {
				msgs = append(msgs, String(fmt.Sprint("g", g, "t", turn)))
				text, next, err := tpl.ExecuteMemo(vars(msgs), prev)
				if err != nil {
					errs <- err
					return
				}
				if want, _ := tpl.Execute(vars(msgs)); text != want {
					errs <- fmt.Errorf("goroutine %d turn %d: differs from Execute", g, turn)
					return
				}
				if l := next.loops[mainLoop(next)]; turn == 0 && !within(l.at(0), memo.loops[mainLoop(memo)]) {
					errs <- fmt.Errorf("goroutine %d: the shared records were copied", g)
					return
				}
				prev = next
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !sameRecords(mainLoopRecords(memo), snapshot) {
		t.Fatal("the shared memo's records changed")
	}
	if got, _, err := tpl.ExecuteMemo(vars(base), memo); err != nil || got != want {
		t.Fatalf("the shared memo replays %q (%v), want %q", got, err, want)
	}
}
