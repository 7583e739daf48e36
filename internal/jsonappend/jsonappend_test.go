package jsonappend

import (
	"encoding/json"
	"testing"
)

func TestString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want, wantJS string }{
		{"plain", `"plain"`, `"plain"`},
		{"q\"b\\", `"q\"b\\"`, `"q\"b\\"`},
		{"\n\r\t\b\f\x01\x1f", `"\n\r\t\b\f\u0001\u001f"`, `"\n\r\t\b\f\u0001\u001f"`},
		{"<a>&é✓🙂", `"<a>&é✓🙂"`, `"<a>&é✓🙂"`},
		{"x\u2028y\u2029", "\"x\u2028y\u2029\"", `"x\u2028y\u2029"`},
		{"bad\xffutf8", "\"bad\uFFFDutf8\"", "\"bad\uFFFDutf8\""},
	}
	for _, tt := range tests {
		if got := string(String(nil, tt.in)); got != tt.want {
			t.Errorf("String(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if got := string(StringJS(nil, tt.in)); got != tt.wantJS {
			t.Errorf("StringJS(%q) = %s, want %s", tt.in, got, tt.wantJS)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\u2028", "\xff\xfe", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, enc := range [][]byte{String(nil, s), StringJS(nil, s)} {
			var back string
			if err := json.Unmarshal(enc, &back); err != nil {
				t.Fatalf("%q encoded as invalid JSON %s: %v", s, enc, err)
			}
			if want := string([]rune(s)); back != want { // []rune maps invalid UTF-8 to U+FFFD
				t.Fatalf("round trip of %q = %q, want %q", s, back, want)
			}
		}
	})
}

func TestUint32s(t *testing.T) {
	t.Parallel()
	if got := string(Uint32s(nil, []uint32{0, 151645, 4294967295})); got != "[0,151645,4294967295]" {
		t.Errorf("Uint32s = %s", got)
	}
	if got := string(Uint32s(nil, nil)); got != "[]" {
		t.Errorf("Uint32s(nil) = %s", got)
	}
}
