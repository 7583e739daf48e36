package stream_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"

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

// BenchmarkFirstChunk parses the first chunk of a turn, whose prompt echo is only counted
// (issue 32: at 100k ids this chunk dominated the proxy's stream CPU). "parse" is ParseChunk alone
// into a reused Chunk; "reader" adds the SSE framing as the server reads it.
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
		for _, hint := range []bool{false, true} {
			name := fmt.Sprintf("reader/echo=%d", n)
			if hint {
				name = fmt.Sprintf("reader+expect/echo=%d", n) // what the server does over HTTP
			}
			b.Run(name, func(b *testing.B) { benchReader(b, body, n, hint) })
		}
	}
}

func benchReader(b *testing.B, body []byte, n int, hint bool) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r := stream.NewChunkReader(bytes.NewReader(body))
		if hint {
			r.ExpectPromptEcho(n)
		}
		c, err := r.Next()
		if err != nil {
			b.Fatal(err)
		}
		if c.PromptTokens != n {
			b.Fatalf("PromptTokens = %d, want %d", c.PromptTokens, n)
		}
		if _, err := r.Next(); err != io.EOF {
			b.Fatal(err)
		}
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
