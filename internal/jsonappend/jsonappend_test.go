package jsonappend

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

func TestString(t *testing.T) {
	t.Parallel()
	// wantASCII is Python's json.dumps(s) (ensure_ascii=True).
	tests := []struct{ in, want, wantJS, wantASCII string }{
		{"plain", `"plain"`, `"plain"`, `"plain"`},
		{"q\"b\\", `"q\"b\\"`, `"q\"b\\"`, `"q\"b\\"`},
		{"\n\r\t\b\f\x01\x1f", `"\n\r\t\b\f\u0001\u001f"`, `"\n\r\t\b\f\u0001\u001f"`, `"\n\r\t\b\f\u0001\u001f"`},
		{"<a>&é✓🙂", `"<a>&é✓🙂"`, `"<a>&é✓🙂"`, `"<a>&\u00e9\u2713\ud83d\ude42"`},
		{"x\u2028y\u2029", "\"x\u2028y\u2029\"", `"x\u2028y\u2029"`, `"x\u2028y\u2029"`},
		{"bad\xffutf8", "\"bad\uFFFDutf8\"", "\"bad\uFFFDutf8\"", `"bad\ufffdutf8"`},
	}
	for _, tt := range tests {
		if got := string(String(nil, tt.in)); got != tt.want {
			t.Errorf("String(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if got := string(StringJS(nil, tt.in)); got != tt.wantJS {
			t.Errorf("StringJS(%q) = %s, want %s", tt.in, got, tt.wantJS)
		}
		if got := string(StringASCII(nil, tt.in)); got != tt.wantASCII {
			t.Errorf("StringASCII(%q) = %s, want %s", tt.in, got, tt.wantASCII)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\u2028", "\xff\xfe", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, enc := range [][]byte{String(nil, s), StringJS(nil, s), StringASCII(nil, s)} {
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

// TestUint32sEach compares every digit count and carry edge, and a long run that grows the
// buffer many times, with strconv.
func TestUint32sEach(t *testing.T) {
	t.Parallel()
	var ids []uint32
	for p := uint64(1); p <= 1e10; p *= 10 {
		for _, v := range []uint64{p - 1, p, p + 1, 2*p - 1, 5 * p, 9*p + 9} {
			if v <= math.MaxUint32 {
				ids = append(ids, uint32(v))
			}
		}
	}
	ids = append(ids, math.MaxUint32, 0)
	for i := range 5000 {
		ids = append(ids, uint32(i)*2654435761)
	}
	for _, prefix := range []string{"", "[1,2,"} {
		var want []byte
		want = append(want, prefix...)
		for _, v := range ids {
			want = strconv.AppendUint(want, uint64(v), 10)
			want = append(want, ';')
		}
		got := Uint32sEach([]byte(prefix), ids, ';')
		if string(got) != string(want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("prefix %q: differs at byte %d: %q vs %q", prefix, i, got[max(0, i-20):i+1], want[max(0, i-20):i+1])
				}
			}
			t.Fatalf("prefix %q: %d bytes, want %d", prefix, len(got), len(want))
		}
	}
	if got := Uint32sEach(nil, nil, ','); len(got) != 0 {
		t.Fatalf("no ids: %q", got)
	}
}

// TestUint32sEachBelowMillion checks every id below 10⁶, which take the fixed-point path, and the
// first ones above it, against strconv.
func TestUint32sEachBelowMillion(t *testing.T) {
	t.Parallel()
	const batch = 1 << 14
	ids := make([]uint32, batch)
	var got, want []byte
	for start := uint32(0); start < 1100000; start += batch {
		want = want[:0]
		for i := range ids {
			ids[i] = start + uint32(i)
			want = strconv.AppendUint(want, uint64(ids[i]), 10)
			want = append(want, ',')
		}
		got = Uint32sEach(got[:0], ids, ',')
		if string(got) != string(want) {
			t.Fatalf("ids %d…%d: differ from strconv", start, start+batch-1)
		}
	}
}

// TestIDTable compares AppendEach with strconv for tables of every kind of size (none, nil,
// smaller than the ids, a vocabulary's, beyond the million it keeps at most) over every id below
// 1.1 million and the largest ones, after a prefix kept as it is.
func TestIDTable(t *testing.T) {
	t.Parallel()
	ids := make([]uint32, 0, 1100000+3)
	for v := range uint32(1100000) {
		ids = append(ids, v)
	}
	ids = append(ids, 999999999, 1000000000, math.MaxUint32)
	want := []byte("[7,")
	for _, v := range ids {
		want = strconv.AppendUint(want, uint64(v), 10)
		want = append(want, ',')
	}
	for _, table := range []*IDTable{nil, NewIDTable(0), NewIDTable(-1), NewIDTable(1000), NewIDTable(151936), NewIDTable(2000000)} {
		if got := table.AppendEach([]byte("[7,"), ids); string(got) != string(want) {
			size := -1
			if table != nil {
				size = len(table.words)
			}
			t.Fatalf("table of %d ids: differs from strconv", size)
		}
	}
}

// TestUint32sEachRoom appends to buffers with no room, exact room and room to spare: the
// digits are stored eight bytes at a time, never past the capacity, and bytes before dst's
// length are kept.
func TestUint32sEachRoom(t *testing.T) {
	t.Parallel()
	ids := []uint32{0, 7, 42, 999999, 1000000, 123456, 5, math.MaxUint32, 10}
	want := "[0,7,42,999999,1000000,123456,5,4294967295,10,"
	for _, n := range []int{0, 1, 3, 256, 257, 1000} {
		var many []uint32
		var wantMany []byte
		for i := range n {
			many = append(many, ids[i%len(ids)])
			wantMany = strconv.AppendUint(wantMany, uint64(ids[i%len(ids)]), 10)
			wantMany = append(wantMany, ',')
		}
		for _, spare := range []int{0, 1, 7, 8, 11, 64, 4096} {
			dst := make([]byte, 1, 1+spare)
			dst[0] = '['
			got := Uint32sEach(dst, many, ',')
			if string(got) != "["+string(wantMany) {
				t.Fatalf("%d ids, %d spare: %q", n, spare, got)
			}
		}
	}
	if got := string(Uint32sEach([]byte("["), ids, ',')); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// FuzzUint32sEach compares any ids, with any separator, with strconv, and with a comma an
// IDTable's encoding of them too.
func FuzzUint32sEach(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0x3f, 0x42, 0x0f, 0}, byte(','))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x40, 0x42, 0x0f, 0, 9}, byte(';'))
	f.Add([]byte{0x01, 0x00, 0x10, 0x00, 0x3f, 0x42, 0x0f, 0}, byte(','))
	table := NewIDTable(1 << 20)
	f.Fuzz(func(t *testing.T, raw []byte, sep byte) {
		var ids []uint32
		var want []byte
		for i := 0; i+4 <= len(raw); i += 4 {
			v := binary.LittleEndian.Uint32(raw[i:])
			if raw[i]&1 == 0 {
				v %= 2000000 // mostly around the fixed-point path's limit
			}
			ids = append(ids, v)
			want = strconv.AppendUint(want, uint64(v), 10)
			want = append(want, sep)
		}
		if got := Uint32sEach(nil, ids, sep); string(got) != string(want) {
			t.Fatalf("%v: got %q, want %q", ids, got, want)
		}
		if sep == ',' {
			if got := table.AppendEach(nil, ids); string(got) != string(want) {
				t.Fatalf("%v: table gave %q, want %q", ids, got, want)
			}
		}
	})
}

func BenchmarkUint32sEach(b *testing.B) {
	ids := make([]uint32, 100000)
	for i := range ids {
		ids[i] = uint32(i*7919) % 151936
	}
	dst := make([]byte, 0, 8*len(ids))
	b.Run("Uint32sEach", func(b *testing.B) {
		for b.Loop() {
			dst = Uint32sEach(dst[:0], ids, ',')
		}
	})
	b.Run("IDTable", func(b *testing.B) {
		table := NewIDTable(151936)
		for b.Loop() {
			dst = table.AppendEach(dst[:0], ids)
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for b.Loop() {
			dst = dst[:0]
			for _, v := range ids {
				dst = strconv.AppendUint(dst, uint64(v), 10)
				dst = append(dst, ',')
			}
		}
	})
}
