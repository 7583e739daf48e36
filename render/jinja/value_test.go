package jinja

import (
	"fmt"
	"testing"
)

// TestNewMapSize: a map made with room for n entries takes more without its keys running into
// its values (they share one allocation).
func TestNewMapSize(t *testing.T) {
	for _, size := range []int{0, 1, 2, 5} {
		m := NewMapSize(size)
		for i := range size + 3 {
			m.Set(fmt.Sprint("k", i), Int(int64(i)))
		}
		if m.Len() != size+3 {
			t.Fatalf("size %d: %d entries, want %d", size, m.Len(), size+3)
		}
		for i := range size + 3 {
			if v, ok := m.getStr(fmt.Sprint("k", i)); !ok || v.n != int64(i) {
				t.Fatalf("size %d: k%d = %v (%v), want %d", size, i, v, ok, i)
			}
		}
	}
}
