package stream

import (
	"encoding/json"
	"testing"
)

func TestAppendString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"q\"b\\s/", `"q\"b\\s/"`},
		{"\n\r\t\b\f\x00\x1f", `"\n\r\t\b\f\u0000\u001f"`},
		{"<>&", `"<>&"`},
		{"\u2028\u2029", `"\u2028\u2029"`},
		{"é🦀", `"é🦀"`},
		{"a\xffb", "\"a\uFFFDb\""},
	}
	for _, tt := range tests {
		if got := string(appendString(nil, tt.in)); got != tt.want {
			t.Errorf("appendString(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// FuzzAppendString checks that the output is valid JSON decoding to what
// encoding/json's encoding of the same string decodes to.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\u2028", "\xff\xfe", "🦀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := appendString(nil, s)
		var got string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("appendString(%q) = %s: invalid JSON: %v", s, out, err)
		}
		ref, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("appendString(%q) decodes to %q, encoding/json gives %q", s, got, want)
		}
	})
}
