package stream

import (
	"fmt"
	"io"
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

// piecesReader returns at most 16 KiB a read, as a socket does.
type piecesReader struct{ b []byte }

func (r *piecesReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 16<<10)], r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestEchoBufferNotDoubled: the first chunk's 100k-id echo is read into the one buffer
// ExpectPromptEcho sized (no doubling to twice the echo, issue 32); once it is read, the reader
// moves to a small buffer and the pool gets the large one back for the next stream, which reads
// its echo into it without allocating another.
func TestEchoBufferNotDoubled(t *testing.T) {
	const n = 100000
	var array []byte
	for i := range n {
		if i > 0 {
			array = append(array, ',')
		}
		array = fmt.Appendf(array, "%d", (i*7919)%151936)
	}
	body := []byte(`data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"a","logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[5],"prompt_token_ids":[`)
	body = append(body, array...)
	body = append(body, "]}],\"usage\":null}\n\n"...)
	for range 3000 { // more than the echo's buffer has room for after it
		body = append(body, "data: {\"choices\":[{\"index\":0,\"text\":\"b\",\"token_ids\":[6]}]}\n\n"...)
	}
	body = append(body, "data: [DONE]\n\n"...)

	pool := NewBufferPool(4, 2<<20)
	var echoBuf []byte
	for turn := range 2 {
		r := NewChunkReader(&piecesReader{b: body})
		r.UseBuffers(pool)
		r.ExpectPromptEcho(n, array[:len(array)/2], array[len(array)/2:])
		reserved := bufferClass(r.dec.want)
		c, err := r.Next()
		if err != nil || c.PromptTokens != n || c.PromptEchoDiffers {
			t.Fatalf("turn %d: first chunk: %d ids, differs %v, %v", turn, c.PromptTokens, c.PromptEchoDiffers, err)
		}
		if len(r.dec.buf) != reserved || reserved > len(array)*9/8+40<<10 {
			t.Fatalf("turn %d: echo read into %d bytes; want the %d reserved (echo %d bytes)", turn, len(r.dec.buf), reserved, len(array))
		}
		big := &r.dec.buf[0]
		if turn == 1 && big != &echoBuf[0] {
			t.Errorf("turn 1: the echo was read into a new buffer, not the pooled one")
		}
		echoBuf = r.dec.buf
		for range 3000 {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
		if len(r.dec.buf) > shrinkAbove {
			t.Errorf("turn %d: after the echo the reader still holds %d bytes", turn, len(r.dec.buf))
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatal(err)
		}
		r.Release()
		if r.dec.buf != nil {
			t.Fatal("Release kept the buffer")
		}
	}
	if len(pool.large) != 1 || len(pool.small) != 1 {
		t.Errorf("pool keeps %d large and %d small buffers, want 1 and 1 (the echo's, the small one)", len(pool.large), len(pool.small))
	}
}

// TestBufferPoolBounds: the pool keeps at most its count of large and of small buffers, drops
// buffers over its size bound, replaces its smallest with a larger one when full, and lends a
// buffer at most four times the size asked.
func TestBufferPoolBounds(t *testing.T) {
	p := NewBufferPool(2, 1<<20)
	p.put(make([]byte, 2<<20)) // over the bound
	if len(p.large)+len(p.small) != 0 {
		t.Fatalf("kept a buffer over the size bound")
	}
	p.put(make([]byte, 256<<10))
	p.put(make([]byte, 512<<10))
	p.put(make([]byte, 200<<10)) // full: smaller than both, dropped
	p.put(make([]byte, 768<<10)) // full: replaces the 256 KiB one
	if len(p.large) != 2 || cap(p.large[0])+cap(p.large[1]) != (768+512)<<10 {
		t.Fatalf("kept %d large buffers: %d, %d", len(p.large), cap(p.large[0]), cap(p.large[1]))
	}
	p.put(make([]byte, readSize))
	p.put(make([]byte, 64<<10))
	p.put(make([]byte, readSize)) // small ones are kept apart: the large ones do not crowd them out
	if len(p.small) != 2 || cap(p.small[0])+cap(p.small[1]) != (32+64)<<10 {
		t.Fatalf("kept %d small buffers", len(p.small))
	}
	if b := p.get(readSize); cap(b) != readSize { // the best fit
		t.Errorf("get(32 KiB) = %d bytes, want the 32 KiB one", cap(b))
	}
	if b := p.get(readSize); cap(b) != 64<<10 {
		t.Errorf("get(32 KiB) = %d bytes, want the 64 KiB one", cap(b))
	}
	if b := p.get(readSize); cap(b) != readSize || len(p.small) != 0 { // none left: a new one
		t.Errorf("get(32 KiB) = %d bytes, %d small left", cap(b), len(p.small))
	}
	if b := p.get(500 << 10); cap(b) != 512<<10 || len(p.large) != 1 {
		t.Errorf("get(500 KiB) = %d bytes, %d large left", cap(b), len(p.large))
	}
	if b := p.get(150 << 10); cap(b) != bufferClass(150<<10) || len(p.large) != 1 { // 768 KiB is over 4 × 160 KiB
		t.Errorf("get(150 KiB) = %d bytes, want a new one", cap(b))
	}
	var nilPool *BufferPool
	nilPool.put(make([]byte, 10))
	if b := nilPool.get(100 << 10); len(b) != bufferClass(100<<10) {
		t.Errorf("nil pool: get = %d bytes", len(b))
	}
}
