package stream

import (
	"fmt"
	"testing"
)

// idsBefore is fastParser.ids as it was before the prompt echo was only counted (it decoded every
// id into dst, and the echo into a throw-away slice): the reference for FuzzIDsCount.
func (p *fastParser) idsBefore(dst *[]uint32) bool {
	p.i++ // '['
	p.ws()
	if p.byte(']') {
		return true
	}
	for {
		start := p.i
		var n uint64
		for isDigit(p.peek()) {
			n = n*10 + uint64(p.b[p.i]-'0')
			p.i++
			if p.i-start > 10 {
				return false
			}
		}
		digits := p.i - start
		if digits == 0 || (digits > 1 && p.b[start] == '0') || n > 1<<32-1 {
			return false
		}
		*dst = append(*dst, uint32(n))
		p.ws()
		switch p.next() {
		case ',':
			p.ws()
			continue
		case ']':
			return true
		}
		return false
	}
}

// FuzzIDsCount checks that counting an id array (dst nil) and decoding it take and refuse the same
// input as the decoder did before, with the same count, ids and end position.
func FuzzIDsCount(f *testing.F) {
	for _, s := range []string{
		`[]`, "[ \n]", `[7]`, `[0]`, `[1,2,3]`, "[ 1 ,2\n,\t3 ]", `[4294967295]`, `[4294967296]`,
		`[9999999999]`, `[12345678901]`, `[01]`, `[-1]`, `[1.0]`, `[1e3]`, `[[1]]`, `[1,]`, `[,1]`,
		`[1,,2]`, `[1 2]`, `[1,2`, `[1,`, `[`, `[1]}`, `[151643,872,198]`,
		// Compact arrays longer than one eight-byte word (countCompactIDs), with a fault at
		// each place a word boundary can put it.
		`[151643,872,198,4294967295,0,12]`, `[151643,872,198,4294967296,0,12]`, `[151643,872,198,04,12]`,
		`[151643,872,198,,12]`, `[151643,872,198 ,12]`, `[151643,872,198,12345678901,7]`, `[1,2,3,4,5,6,7,8,9,10,11,12,13]`,
		`[1,2,3,4,5,6,7,8,9,10,11,12,13`, `[12345678,12345678,12345678]`, `[12345678,12345678,1234567,]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || data[0] != '[' {
			return
		}
		var want []uint32
		ref := fastParser{b: data}
		wantOK := ref.idsBefore(&want)

		cnt := fastParser{b: data}
		n, ok := cnt.ids(nil)
		if ok != wantOK {
			t.Fatalf("%q: counting took it: %v, the decoder before: %v", data, ok, wantOK)
		}
		var got []uint32
		dec := fastParser{b: data}
		_, decOK := dec.ids(&got)
		if decOK != wantOK {
			t.Fatalf("%q: decoding took it: %v, the decoder before: %v", data, decOK, wantOK)
		}
		if !ok {
			return
		}
		if n != len(want) || cnt.i != ref.i || dec.i != ref.i {
			t.Fatalf("%q: count %d at %d (decode at %d), want %d at %d", data, n, cnt.i, dec.i, len(want), ref.i)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: decoded %v, want %v", data, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%q: decoded %v, want %v", data, got, want)
			}
		}
	})
}

// TestCountCompactIDsEcho: a 100k-id echo as vLLM writes it is counted by the word-at-a-time path,
// to the same count and end as the byte loop, and a bad byte anywhere in it is refused.
func TestCountCompactIDsEcho(t *testing.T) {
	echo := []byte{'['}
	for i := range 100000 {
		if i > 0 {
			echo = append(echo, ',')
		}
		echo = fmt.Appendf(echo, "%d", (i*7919)%151936)
	}
	echo = append(echo, ']', '}')
	n, end, ok := countCompactIDs(echo, 1)
	if !ok || n != 100000 || end != len(echo)-1 {
		t.Fatalf("countCompactIDs = %d, %d, %v; want 100000, %d, true", n, end, ok, len(echo)-1)
	}
	for _, at := range []int{1, 7, 8, 9, 1000, len(echo) / 2, len(echo) - 3} {
		bad := append([]byte(nil), echo...)
		for bad[at] == ',' {
			at++
		}
		bad[at] = 'x'
		p := fastParser{b: bad}
		if _, ok := p.ids(nil); ok {
			t.Errorf("an x at %d was taken", at)
		}
	}
}
