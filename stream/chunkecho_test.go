package stream_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/stitchllm/stitch/stream"
)

// firstChunk is vLLM's first /v1/completions stream chunk with return_token_ids: one generated id
// and the echo of an n-id prompt (ids spread like a real vocabulary: 1–6 digits).
func firstChunk(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"id":"cmpl-5f0c1e2d3b4a49c8a7e6d5c4b3a29180","object":"text_completion","created":1767225600,"model":"qwen3","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[1234],"prompt_token_ids":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa((i * 7919) % 151936))
	}
	b.WriteString(`]}],"usage":null}`)
	return b.Bytes()
}

// BenchmarkFirstChunk parses the first chunk of a turn, whose prompt echo is only counted or
// checked (issue 32: at 100k ids this chunk dominated the proxy's stream CPU). "parse" is
// ParseChunk alone into a reused Chunk; "reader" adds the SSE framing as the server reads it:
// "+expect" sizes the buffer for n ids, "+check" also gives the request's array (the echo is
// compared, not counted), "+pool" reuses the read buffer across streams, as the server does, and
// "differs" is an echo that is not the array told (one id changed: counted after the compare).
func BenchmarkFirstChunk(b *testing.B) {
	for _, n := range []int{0, 4000, 100_000} {
		data := firstChunk(n)
		b.Run(fmt.Sprintf("parse/echo=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var c stream.Chunk
			for b.Loop() {
				if err := stream.ParseChunk(data, &c); err != nil {
					b.Fatal(err)
				}
				if c.PromptTokens != n {
					b.Fatalf("PromptTokens = %d, want %d", c.PromptTokens, n)
				}
			}
		})
		body := append(append([]byte("data: "), data...), "\n\ndata: [DONE]\n\n"...)
		array := echoArray(n)
		pool := stream.NewBufferPool(4, 2<<20)
		for _, v := range []struct {
			name   string
			expect bool
			array  [][]byte
			pool   *stream.BufferPool
		}{
			{name: "reader"},
			{name: "reader+expect", expect: true}, // the server before the check
			{name: "reader+check", expect: true, array: array},
			{name: "reader+check+pool", expect: true, array: array, pool: pool}, // the server now
		} {
			b.Run(fmt.Sprintf("%s/echo=%d", v.name, n), func(b *testing.B) {
				benchReader(b, body, n, v.expect, v.array, v.pool, false)
			})
		}
		if n > 0 {
			differs := bytes.Replace(body, []byte(`"prompt_token_ids":[0,`), []byte(`"prompt_token_ids":[1,`), 1)
			b.Run(fmt.Sprintf("reader+check+pool/differs/echo=%d", n), func(b *testing.B) {
				benchReader(b, differs, n, true, array, pool, true)
			})
		}
	}
}

func benchReader(b *testing.B, body []byte, n int, expect bool, array [][]byte, pool *stream.BufferPool, differs bool) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r := stream.NewChunkReader(bytes.NewReader(body))
		r.UseBuffers(pool)
		if expect {
			r.ExpectPromptEcho(n, array...)
		}
		c, err := r.Next()
		if err != nil {
			b.Fatal(err)
		}
		if c.PromptTokens != n || c.PromptEchoDiffers != differs {
			b.Fatalf("PromptTokens = %d, differs %v; want %d, %v", c.PromptTokens, c.PromptEchoDiffers, n, differs)
		}
		if _, err := r.Next(); err != io.EOF {
			b.Fatal(err)
		}
		r.Release()
	}
}

// TestPromptEchoCount pins what the first chunk's prompt echo yields, through the fast path and
// through ParseChunk (which falls back to the general gjson path when the fast one refuses): the
// same outcomes as when the fast path decoded the echo into a slice to count it.
func TestPromptEchoCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, echo string
		fast       bool // the fast path takes the chunk
		want       int  // PromptTokens from ParseChunk
		bad        bool // ParseChunk fails with ErrBadChunk
	}{
		{name: "null", echo: `null`, fast: true, want: 0},
		{name: "empty", echo: `[]`, fast: true, want: 0},
		{name: "empty spaced", echo: "[ \n\t]", fast: true, want: 0},
		{name: "one", echo: `[7]`, fast: true, want: 1},
		{name: "zero", echo: `[0]`, fast: true, want: 1},
		{name: "three", echo: `[1,2,3]`, fast: true, want: 3},
		{name: "whitespace", echo: "[ 1 ,2\n,\t3\r ]", fast: true, want: 3},
		{name: "max uint32", echo: `[4294967295,1]`, fast: true, want: 2},
		{name: "above uint32", echo: `[4294967296]`, fast: false, want: 1},
		{name: "eleven digits", echo: `[12345678901,2]`, fast: false, want: 2},
		{name: "leading zero", echo: `[01]`, fast: false, bad: true},
		{name: "negative", echo: `[-1,2]`, fast: false, want: 2},
		{name: "float", echo: `[1.0,2]`, fast: false, want: 2},
		{name: "exponent", echo: `[1e3]`, fast: false, want: 1},
		{name: "string", echo: `["1"]`, fast: false, want: 1},
		{name: "null element", echo: `[null]`, fast: false, want: 1},
		{name: "nested", echo: `[[1],2]`, fast: false, want: 2},
		{name: "nested pair", echo: `[[1,2]]`, fast: false, want: 2}, // the general path counts commas
		{name: "object", echo: `{"a":1}`, fast: false, want: 0},
		{name: "number", echo: `5`, fast: false, want: 0},
		{name: "trailing comma", echo: `[1,]`, fast: false, bad: true},
		{name: "leading comma", echo: `[,1]`, fast: false, bad: true},
		{name: "double comma", echo: `[1,,2]`, fast: false, bad: true},
		{name: "missing comma", echo: `[1 2]`, fast: false, bad: true},
		{name: "truncated after id", echo: `[1,2`, fast: false, bad: true},
		{name: "truncated after comma", echo: `[1,`, fast: false, bad: true},
		{name: "truncated open", echo: `[`, fast: false, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := []byte(`{"choices":[{"index":0,"text":"a","token_ids":[5],"prompt_token_ids":` + tc.echo + `}],"usage":null}`)
			var c stream.Chunk
			if got := stream.ParseChunkFastForTest(data, &c); got != tc.fast {
				t.Errorf("fast path took it: %v, want %v", got, tc.fast)
			} else if got && c.PromptTokens != tc.want {
				t.Errorf("fast path: PromptTokens = %d, want %d", c.PromptTokens, tc.want)
			}
			err := stream.ParseChunk(data, &c)
			if tc.bad {
				if !errors.Is(err, stream.ErrBadChunk) {
					t.Errorf("ParseChunk: err = %v, want ErrBadChunk", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseChunk: %v", err)
			}
			if c.PromptTokens != tc.want {
				t.Errorf("ParseChunk: PromptTokens = %d, want %d", c.PromptTokens, tc.want)
			}
			if len(c.TokenIDs) != 1 || c.TokenIDs[0] != 5 {
				t.Errorf("ParseChunk: TokenIDs = %v, want [5]", c.TokenIDs)
			}
		})
	}
}

// echoArray is the compact JSON of firstChunk(n)'s prompt echo between the brackets, split into
// pieces as a continuation's request holds it (the previous turn's ids, then the new ones).
func echoArray(n int) [][]byte {
	var b []byte
	cut := -1
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		if i == n*3/4 {
			cut = len(b)
		}
		b = strconv.AppendInt(b, int64((i*7919)%151936), 10)
	}
	if cut < 0 {
		return [][]byte{b}
	}
	return [][]byte{b[:cut], b[cut:]}
}

// TestPromptEchoChecked: a reader told the request's prompt array takes an echo that is those
// bytes without counting it (PromptTokens is the count it was told), and one that differs in any
// way is validated and counted as without the check, with PromptEchoDiffers set, through the
// fast path and the general one alike.
func TestPromptEchoChecked(t *testing.T) {
	t.Parallel()
	const n = 5000
	sent := firstChunk(n)
	array := echoArray(n)
	echo := func(data []byte) []byte { // the prompt_token_ids value in data
		i := bytes.Index(data, []byte(`"prompt_token_ids":`)) + len(`"prompt_token_ids":`)
		return data[i : i+bytes.IndexByte(data[i:], ']')+1]
	}
	replace := func(old, new string) []byte {
		return bytes.Replace(sent, []byte(old), []byte(new), 1)
	}
	sentEcho := string(echo(sent))
	for _, tc := range []struct {
		name    string
		data    []byte
		told    int  // the count the reader is told (n unless a test says otherwise)
		want    int  // PromptTokens
		differs bool // PromptEchoDiffers
		bad     bool // the chunk is refused (ErrBadChunk)
	}{
		{name: "as sent", data: sent, want: n},
		{name: "as sent, general path", data: replace(`"usage":null`, `"usage":null,"extra":{"a":[1]}`), want: n},
		{name: "one id changed", data: replace(`[0,7919,`, `[0,7918,`), want: n, differs: true},
		{name: "one id more", data: replace(`"prompt_token_ids":[`, `"prompt_token_ids":[151643,`), want: n + 1, differs: true},
		{name: "last id missing", data: replace(sentEcho, sentEcho[:strings.LastIndexByte(sentEcho, ',')]+"]"), want: n - 1, differs: true},
		{name: "spaced", data: replace(sentEcho, strings.ReplaceAll(sentEcho, ",", ", ")), want: n, differs: true},
		{name: "spaced, general path", data: bytes.Replace(replace(sentEcho, strings.ReplaceAll(sentEcho, ",", ", ")), []byte(`"usage":null`), []byte(`"usage":null,"x":{}`), 1), want: n, differs: true},
		{name: "float id", data: replace(`[0,7919,`, `[0,7919.0,`), want: n, differs: true},
		{name: "broken", data: replace(`[0,7919,`, `[0,,7919,`), bad: true},
		{name: "null", data: replace(sentEcho, "null"), want: 0},
		{name: "told another count", data: sent, told: n - 1, want: n - 1}, // the count told is trusted
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			told := n
			if tc.told != 0 {
				told = tc.told
			}
			body := append(append([]byte("data: "), tc.data...), "\n\ndata: [DONE]\n\n"...)
			r := stream.NewChunkReader(bytes.NewReader(body))
			r.ExpectPromptEcho(told, array...)
			defer r.Release()
			c, err := r.Next()
			if tc.bad {
				if !errors.Is(err, stream.ErrBadChunk) {
					t.Fatalf("err = %v, want ErrBadChunk", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.PromptTokens != tc.want || c.PromptEchoDiffers != tc.differs {
				t.Errorf("PromptTokens %d, PromptEchoDiffers %v; want %d, %v", c.PromptTokens, c.PromptEchoDiffers, tc.want, tc.differs)
			}
			if len(c.TokenIDs) != 1 || c.TokenIDs[0] != 1234 || c.Text != " word" {
				t.Errorf("TokenIDs %v, Text %q", c.TokenIDs, c.Text)
			}
			// Unchecked, the same chunk counts the same (the check only skips the count).
			var plain stream.Chunk
			if err := stream.ParseChunk(tc.data, &plain); err != nil || (tc.told == 0 && plain.PromptTokens != tc.want) || plain.PromptEchoDiffers {
				t.Errorf("ParseChunk: PromptTokens %d, PromptEchoDiffers %v, err %v; want %d", plain.PromptTokens, plain.PromptEchoDiffers, err, tc.want)
			}
			if _, err := r.Next(); err != io.EOF {
				t.Errorf("after the chunk: %v, want io.EOF", err)
			}
		})
	}
}

// TestPooledReadersApart: readers sharing a BufferPool, run concurrently (go test -race), each
// read their own stream: a buffer is never lent to two readers at once nor given back twice,
// and nothing a Chunk holds aliases it after Release.
func TestPooledReadersApart(t *testing.T) {
	t.Parallel()
	pool := stream.NewBufferPool(2, 4<<20)
	const readers, rounds = 4, 20
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for g := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 20000 + 3000*g // each its own echo size, so buffers of several sizes circulate
			first := bytes.Replace(firstChunk(n), []byte(`" word"`), fmt.Appendf(nil, `"reader %d"`, g), 1)
			body := append(append([]byte("data: "), first...), "\n\n"...)
			for i := range 50 {
				body = fmt.Appendf(body, "data: {\"choices\":[{\"index\":0,\"text\":\"r%d t%d\",\"token_ids\":[%d],\"finish_reason\":null,\"stop_reason\":null}]}\n\n", g, i, g*1000+i)
			}
			body = append(body, "data: [DONE]\n\n"...)
			var kept []string
			for range rounds {
				r := stream.NewChunkReader(iotest.HalfReader(bytes.NewReader(body)))
				r.UseBuffers(pool)
				r.ExpectPromptEcho(n, echoArray(n)...)
				c, err := r.Next()
				if err != nil || c.PromptTokens != n || c.PromptEchoDiffers || c.Text != fmt.Sprintf("reader %d", g) {
					errs <- fmt.Errorf("reader %d: first chunk %+v, %v", g, c, err)
					return
				}
				kept = append(kept[:0], c.Text)
				for i := range 50 {
					c, err := r.Next()
					if err != nil || len(c.TokenIDs) != 1 || c.TokenIDs[0] != uint32(g*1000+i) {
						errs <- fmt.Errorf("reader %d chunk %d: %+v, %v", g, i, c, err)
						return
					}
					kept = append(kept, c.Text)
				}
				if _, err := r.Next(); err != io.EOF {
					errs <- fmt.Errorf("reader %d: end %v", g, err)
					return
				}
				r.Release()
				r.Release() // harmless
				if _, err := r.Next(); err == nil {
					errs <- fmt.Errorf("reader %d: Next after Release succeeded", g)
					return
				}
				for i, s := range kept[1:] { // other readers reuse the buffer now
					if s != fmt.Sprintf("r%d t%d", g, i) {
						errs <- fmt.Errorf("reader %d: chunk %d's text became %q after Release", g, i, s)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
