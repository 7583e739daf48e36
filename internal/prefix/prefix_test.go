package prefix

import (
	"strings"
	"testing"
)

func TestLen(t *testing.T) {
	long := strings.Repeat("abcdefgh", 2000)
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 0},
		{"abc", "abd", 2},
		{"abc", "abc", 3},
		{"abc", "abcdef", 3},
		{long, long, len(long)},
		{long + "x", long + "y", len(long)},
		{long[:5000] + "x" + long[5001:], long, 5000},
		{long[:4096] + "x", long, 4096},
	} {
		if got := Len(tt.a, tt.b); got != tt.want {
			t.Errorf("Len(%d bytes, %d bytes) = %d, want %d", len(tt.a), len(tt.b), got, tt.want)
		}
		if got := Len(tt.b, tt.a); got != tt.want {
			t.Errorf("Len swapped = %d, want %d", got, tt.want)
		}
	}
}
