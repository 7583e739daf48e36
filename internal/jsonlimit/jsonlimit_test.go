package jsonlimit

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestCheckDepth(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		max   int
		deep  bool
		where int
	}{
		{"empty", "", 2, false, 0},
		{"scalar", `"x"`, 1, false, 0},
		{"at bound", `[[1]]`, 2, false, 0},
		{"over bound", `[[[1]]]`, 2, true, 2},
		{"objects count", `{"a":{"b":{}}}`, 2, true, 10},
		{"brackets in strings are text", `["[[[[", "{{{{"]`, 1, false, 0},
		{"escaped quote keeps the string open", `["\"[[[["]`, 1, false, 0},
		{"escaped backslash closes it", `["\\", [[1]]]`, 2, true, 8},
		{"siblings do not add up", `[[1],[2],[3],{"a":4}]`, 2, false, 0},
		{"unbalanced closers do not go negative", `]]]][[`, 1, true, 5},
		{"unterminated string", `["[[[`, 1, false, 0},
		{"default bound", strings.Repeat("[", DefaultMaxDepth) + strings.Repeat("]", DefaultMaxDepth), 0, false, 0},
		{"default bound exceeded", strings.Repeat("[", DefaultMaxDepth+1), 0, true, DefaultMaxDepth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, err := range []error{CheckDepth([]byte(tt.in), tt.max), CheckDepthString(tt.in, tt.max)} {
				if (err != nil) != tt.deep {
					t.Fatalf("CheckDepth(%q, %d) = %v, want deep=%v", tt.in, tt.max, err, tt.deep)
				}
				if err == nil {
					continue
				}
				var de *DepthError
				if !errors.As(err, &de) || !errors.Is(err, ErrTooDeep) || de.Offset != tt.where {
					t.Fatalf("CheckDepth(%q) = %#v, want a DepthError at %d", tt.in, err, tt.where)
				}
			}
		})
	}
}

// TestMillionBrackets is the crash of issue 14: a body of a million '[' must be refused by a
// linear scan, never reach a recursive validator.
func TestMillionBrackets(t *testing.T) {
	body := bytes.Repeat([]byte("["), 1<<20)
	if err := CheckDepth(body, DefaultMaxDepth); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("CheckDepth(1M '[') = %v, want ErrTooDeep", err)
	}
}

// FuzzCheckDepth: whatever CheckDepth passes, gjson's recursive validator can take (bounded
// depth), and the answer never depends on more than the bracket structure outside strings.
func FuzzCheckDepth(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"]"}]}`, `[[[[`, `"\\\""`, `{"x":"\u005b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckDepth(data, 8)
		if err2 := CheckDepthString(string(data), 8); (err == nil) != (err2 == nil) {
			t.Fatalf("CheckDepth and CheckDepthString disagree: %v vs %v", err, err2)
		}
		if err == nil {
			_ = gjson.ValidBytes(data)
		}
	})
}

func BenchmarkCheckDepth(b *testing.B) {
	body := bytes.Repeat([]byte(`{"type":"message","role":"user","content":[{"type":"input_text","text":"hello \"world\""}]},`), 1<<14)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		_ = CheckDepth(body, DefaultMaxDepth)
	}
}
