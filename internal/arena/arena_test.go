package arena

import (
	"slices"
	"sync"
	"testing"
	"unsafe"
)

func shares(a, b []byte) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

// TestJoin checks each way a continuation meets the previous slice's arena: appended in place,
// the same turn joined again, a branch, a tail that repeats the previous slice's last elements,
// and one that does not fit.
func TestJoin(t *testing.T) {
	root, a := Join[byte](nil, nil, 0, []byte("abc"), 4) // room: 4
	cases := []struct {
		name       string
		prev       []byte
		keep       int
		tail       string
		want       string
		wantShared bool
	}{
		{"appended in place", root, 3, "de", "abcde", true},
		{"same turn again", root, 3, "de", "abcde", true},
		{"shorter repeat of written elements", root, 3, "d", "abcd", true},
		{"branch after the written ones", root, 3, "dx", "abcdx", false},
		{"tail repeats the kept elements' successors", root, 1, "bcde", "abcde", true},
		{"tail differs before prev's end", root, 1, "xy", "axy", false},
		{"does not fit", root, 3, "defghijk", "abcdefghijk", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ga := Join(a, c.prev, c.keep, []byte(c.tail), 4)
			if string(got) != c.want {
				t.Fatalf("Join = %q, want %q", got, c.want)
			}
			if cap(got) != len(got) {
				t.Fatalf("cap %d != len %d: an append would write into the room", cap(got), len(got))
			}
			if s := shares(got, root) && ga == a; s != c.wantShared {
				t.Fatalf("shared = %v, want %v", s, c.wantShared)
			}
			if string(root) != "abc" {
				t.Fatalf("the previous slice changed: %q", root)
			}
		})
	}
}

// TestJoinChain checks that a chain of turns shares one array until it is full, and that every
// earlier slice keeps its elements after later ones are written.
func TestJoinChain(t *testing.T) {
	var (
		a    *Arena[uint32]
		prev []uint32
		all  [][]uint32
		want []uint32
	)
	copies := 0
	for turn := range 40 {
		tail := []uint32{uint32(turn), uint32(turn) + 1000}
		var next []uint32
		before := a
		next, a = Join(a, prev, len(prev), tail, 8)
		if a != before {
			copies++
		}
		want = append(want, tail...)
		if !slices.Equal(next, want) {
			t.Fatalf("turn %d: %v, want %v", turn, next, want)
		}
		all = append(all, next)
		prev = next
	}
	for i, s := range all {
		if len(s) != 2*(i+1) || !slices.Equal(s, want[:len(s)]) {
			t.Fatalf("slice of turn %d changed: %v", i, s)
		}
	}
	if copies > 10 {
		t.Fatalf("%d copies for 40 turns of 2 elements with room ≥ 8 and a quarter", copies)
	}
}

// TestJoinConcurrent joins two branches from the same slice at once: each gets its own elements
// and the slice is unchanged (run with -race).
func TestJoinConcurrent(t *testing.T) {
	root, a := Join[byte](nil, nil, 0, []byte("root:"), 64)
	for range 100 {
		var wg sync.WaitGroup
		got := make([][]byte, 2)
		for i, tail := range []string{"left", "right"} {
			wg.Go(func() { got[i], _ = Join(a, root, len(root), []byte(tail), 64) })
		}
		wg.Wait()
		if string(got[0]) != "root:left" || string(got[1]) != "root:right" || string(root) != "root:" {
			t.Fatalf("got %q %q, root %q", got[0], got[1], root)
		}
		root, a = Join[byte](nil, nil, 0, []byte("root:"), 64)
	}
}

// TestJoinSharesLastCopy: a continuation that has to copy (its tail differs from the
// previous slice's last elements, as when a template rewrites the last message) shares that copy
// when it is joined again (a retry, a re-preparation), after comparing only its tail; a branch
// from the same point, or one that keeps more than was copied, still copies; and no slice
// changes.
func TestJoinSharesLastCopy(t *testing.T) {
	prev, a := Join[byte](nil, nil, 0, []byte("history:last"), 64)
	first, fa := Join(a, prev, 8, []byte("LAST:next"), 64)
	if fa == a || string(first) != "history:LAST:next" {
		t.Fatalf("first join: %q, shared %v", first, fa == a)
	}
	again, ga := Join(a, prev, 8, []byte("LAST:next"), 64)
	if ga != fa || !shares(again, first) || string(again) != "history:LAST:next" {
		t.Fatalf("the same continuation again: %q, shares the copy %v", again, ga == fa && shares(again, first))
	}
	shorter, sa := Join(a, prev, 8, []byte("LAST"), 64)
	if sa != fa || !shares(shorter, first) || string(shorter) != "history:LAST" {
		t.Fatalf("a shorter repeat: %q, shares the copy %v", shorter, sa == fa)
	}
	branch, ba := Join(a, prev, 8, []byte("LAST:other"), 64)
	if ba == fa || ba == a || string(branch) != "history:LAST:other" {
		t.Fatalf("a branch: %q, shares %v", branch, ba == fa || ba == a)
	}
	// The branch is now the last copy: the first continuation copies again, and is again equal.
	back, _ := Join(a, prev, 8, []byte("LAST:next"), 64)
	if string(back) != "history:LAST:next" {
		t.Fatalf("back to the first continuation: %q", back)
	}
	// Keeping more than the copy took: copied, not shared (its elements after 8 are another's).
	more, ma := Join(a, prev, 10, []byte("XY"), 64)
	if string(more) != "history:laXY" || ma == fa {
		t.Fatalf("keep beyond the copy: %q", more)
	}
	for _, c := range []struct {
		got  []byte
		want string
	}{
		{prev, "history:last"}, {first, "history:LAST:next"}, {again, "history:LAST:next"},
		{shorter, "history:LAST"}, {branch, "history:LAST:other"},
	} {
		if string(c.got) != c.want {
			t.Fatalf("a slice changed: %q, want %q", c.got, c.want)
		}
	}
}

// TestJoinCopyConcurrent joins the same copying continuation, and a branch of it, from several
// goroutines at once: each gets its own elements, equal ones for the same continuation, and no
// slice changes (run with -race).
func TestJoinCopyConcurrent(t *testing.T) {
	for range 100 {
		prev, a := Join[byte](nil, nil, 0, []byte("history:last"), 64)
		tails := []string{"LAST:next", "LAST:next", "LAST:other", "LAST:next"}
		got := make([][]byte, len(tails))
		var wg sync.WaitGroup
		for i, tail := range tails {
			wg.Go(func() { got[i], _ = Join(a, prev, 8, []byte(tail), 64) })
		}
		wg.Wait()
		for i, tail := range tails {
			if string(got[i]) != "history:"+tail {
				t.Fatalf("join %d: %q, want %q", i, got[i], "history:"+tail)
			}
		}
		if string(prev) != "history:last" {
			t.Fatalf("prev changed: %q", prev)
		}
	}
}

// TestRoomAndCap: a copy's room is twice its length between the floor and the most, and Cap
// counts the whole backing array, room included.
func TestRoomAndCap(t *testing.T) {
	for _, c := range []struct{ n, want int }{{0, 100}, {10, 100}, {60, 120}, {400, 800}, {600, 1000}, {5000, 1000}} {
		if got := Room(c.n, 100, 1000); got != c.want {
			t.Errorf("Room(%d, 100, 1000) = %d, want %d", c.n, got, c.want)
		}
	}
	s, a := Join[uint32](nil, nil, 0, make([]uint32, 60), Room(60, 100, 1000))
	if a.Cap() < 60+120 || a.Cap() > 60+2*120 || len(s) != 60 {
		t.Errorf("60 elements with room 120: len %d, Cap %d", len(s), a.Cap())
	}
	var none *Arena[uint32]
	if none.Cap() != 0 {
		t.Error("a nil arena holds something")
	}
}

// TestEqual: equal agrees with slices.Equal for the element types it compares as memory and for
// the others.
func TestEqual(t *testing.T) {
	type pair struct{ a, b int }
	u := []uint32{1, 2, 3, 0xFFFFFFFF}
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"bytes equal", equal([]byte("abc"), []byte("abc")), true},
		{"bytes differ", equal([]byte("abc"), []byte("abd")), false},
		{"bytes length", equal([]byte("ab"), []byte("abc")), false},
		{"bytes nil and empty", equal([]byte(nil), []byte{}), true},
		{"uint32 equal", equal(u, slices.Clone(u)), true},
		{"uint32 differ in a high byte", equal(u, []uint32{1, 2, 3, 0xFEFFFFFF}), false},
		{"uint32 length", equal(u[:3], u), false},
		{"uint32 empty", equal(u[:0], []uint32(nil)), true},
		{"structs equal", equal([]pair{{1, 2}}, []pair{{1, 2}}), true},
		{"structs differ", equal([]pair{{1, 2}}, []pair{{1, 3}}), false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: equal = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}
