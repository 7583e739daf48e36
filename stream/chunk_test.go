package stream_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stitchllm/stitch/stream"
)

func TestParseChunk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want stream.Chunk
		err  error
	}{
		{
			name: "first chunk",
			in:   `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"Hi \"x\"","logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[13048,220],"prompt_token_ids":[1,2,3]}],"usage":null}`,
			want: stream.Chunk{TokenIDs: []uint32{13048, 220}, PromptTokens: 3, Text: `Hi "x"`},
		},
		{
			name: "finish with stop string",
			in:   `{"choices":[{"index":0,"text":"","finish_reason":"stop","stop_reason":"\n\n","token_ids":[],"prompt_token_ids":null}],"usage":null}`,
			want: stream.Chunk{FinishReason: "stop", StopReason: json.RawMessage(`"\n\n"`)},
		},
		{
			name: "finish with stop token id",
			in:   `{"choices":[{"index":0,"text":"","finish_reason":"stop","stop_reason":151645,"token_ids":[151645]}]}`,
			want: stream.Chunk{TokenIDs: []uint32{151645}, FinishReason: "stop", StopReason: json.RawMessage(`151645`)},
		},
		{
			name: "usage with cached tokens",
			in:   `{"choices":[],"usage":{"prompt_tokens":100,"total_tokens":110,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":96}}}`,
			want: stream.Chunk{Usage: &stream.Usage{PromptTokens: 100, CompletionTokens: 10, CachedTokens: 96}},
		},
		{
			name: "usage without details",
			in:   `{"choices":[],"usage":{"prompt_tokens":5,"total_tokens":6,"completion_tokens":1,"prompt_tokens_details":null}}`,
			want: stream.Chunk{Usage: &stream.Usage{PromptTokens: 5, CompletionTokens: 1}},
		},
		{
			name: "error wrapper",
			in:   `{"error": {"message": "boom", "type": "InternalServerError", "param": null, "code": 500}}`,
			want: stream.Chunk{Err: &stream.UpstreamError{Message: "boom", Type: "InternalServerError", Code: 500}},
		},
		{
			name: "error object shape",
			in:   `{"object":"error","message":"bad","type":"BadRequestError","param":"max_tokens","code":400}`,
			want: stream.Chunk{Err: &stream.UpstreamError{Message: "bad", Type: "BadRequestError", Param: "max_tokens", Code: 400}},
		},
		{name: "not json", in: `{"choices":`, err: stream.ErrBadChunk},
		{name: "not an object", in: `[1]`, err: stream.ErrBadChunk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c stream.Chunk
			err := stream.ParseChunk([]byte(tt.in), &c)
			if !errors.Is(err, tt.err) {
				t.Fatalf("ParseChunk(%s) error = %v, want %v", tt.in, err, tt.err)
			}
			if err != nil {
				return
			}
			// usage and textArena are storage behind Usage and Text, compared through them.
			opt := cmp.FilterPath(func(p cmp.Path) bool {
				last := p.Last().String()
				return last == ".usage" || last == ".textArena"
			}, cmp.Ignore())
			if diff := cmp.Diff(tt.want, c, cmp.AllowUnexported(stream.Chunk{}), opt, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseChunk(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseChunkReuseDoesNotAlias(t *testing.T) {
	t.Parallel()
	data := []byte(`{"choices":[{"index":0,"text":"abc","finish_reason":"length","token_ids":[1]}]}`)
	var c stream.Chunk
	if err := stream.ParseChunk(data, &c); err != nil {
		t.Fatal(err)
	}
	copy(data, strings.Repeat("x", len(data)))
	if c.Text != "abc" || c.FinishReason != "length" {
		t.Errorf("chunk aliases its input: %+v", c)
	}
}

func TestChunkReader(t *testing.T) {
	t.Parallel()
	body := "data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"token_ids\":[64]}]}\n\n: ping\n\ndata: [DONE]\n\ndata: {\"choices\":[]}\n\n"
	r := stream.NewChunkReader(strings.NewReader(body))
	c, err := r.Next()
	if err != nil || len(c.TokenIDs) != 1 || c.TokenIDs[0] != 64 {
		t.Fatalf("first Next = %+v, %v", c, err)
	}
	for range 2 {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("after [DONE]: err = %v, want io.EOF", err)
		}
	}
	r = stream.NewChunkReader(strings.NewReader("data: {\"choices\":[]}\n\n"))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, stream.ErrTruncated) {
		t.Errorf("no [DONE]: err = %v, want ErrTruncated", err)
	}
}

func TestUpstreamErrorString(t *testing.T) {
	t.Parallel()
	e := &stream.UpstreamError{Message: "boom", Type: "InternalServerError", Code: 500}
	if got, want := e.Error(), "upstream error 500 (InternalServerError): boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestParseChunkOddIDs(t *testing.T) {
	t.Parallel()
	var c stream.Chunk
	if err := stream.ParseChunk([]byte(`{"choices":[{"token_ids":[ 1 ,2, 3.0 ,4e0]}]}`), &c); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint32{1, 2, 3, 4}, c.TokenIDs); diff != "" {
		t.Errorf("token ids (-want +got):\n%s", diff)
	}
}

// FuzzParseChunkFast checks the one-pass parser of the common chunk against the general one:
// whenever it takes a chunk, the general parser must take it too and produce the same Chunk.
func FuzzParseChunkFast(f *testing.F) {
	for _, s := range []string{
		`{"id":"cmpl-1","object":"text_completion","created":1767225600,"model":"qwen3","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[1234],"prompt_token_ids":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"q","choices":[{"index":0,"text":"\n\u00e9\"","logprobs":null,"finish_reason":"stop","stop_reason":151645,"token_ids":[1,2, 3],"prompt_token_ids":[7,8,9]}],"usage":null}`,
		`{"choices":[{"text":"","finish_reason":"length","stop_reason":"\nUser:","token_ids":[]}]}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
		`{"object":"error","message":"boom","code":500}`,
		`{"choices":[{"token_ids":[4294967296]}]}`,
		`{"choices":[{"token_ids":[01]}]}`,
		`{"choices":[{"token_ids":[1],"token_ids":[2]}]}`,
		` {"choices":[{"index":0,"text":"a"}],"x":-1.5e+3,"y":true} `,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast stream.Chunk
		ok := stream.ParseChunkFastForTest(data, &fast)
		var general stream.Chunk
		err := stream.ParseChunkGeneralForTest(data, &general)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("fast parser took %q; the general one says %v", data, err)
		}
		if diff := cmp.Diff(general, fast, cmpopts.IgnoreUnexported(stream.Chunk{})); diff != "" {
			t.Fatalf("%q: fast vs general (-general +fast):\n%s", data, diff)
		}
	})
}

// The fast path takes what vLLM sends for every token (else it would only cost time).
func TestParseChunkFastTakesVLLMChunks(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`{"id":"cmpl-1","object":"text_completion","created":1767225600,"model":"qwen3","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[1234],"prompt_token_ids":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"q","choices":[{"index":0,"text":"\n","logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":[1,2],"prompt_token_ids":[7,8,9]}],"usage":null}`,
	} {
		var c stream.Chunk
		if !stream.ParseChunkFastForTest([]byte(s), &c) {
			t.Errorf("fast path refused %s", s)
		}
	}
}

// FuzzParseChunkPrefix checks that a chunk parsed after another, from the remembered bytes up to
// the first one's text on when it starts with them, gives what parsing it alone gives. The second
// chunk is the first one cut anywhere with any tail, so it often starts with the remembered bytes.
func FuzzParseChunkPrefix(f *testing.F) {
	token := `{"id":"cmpl-1","object":"text_completion","created":1767225600,"model":"qwen3","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[1234],"prompt_token_ids":null}],"usage":null}`
	for _, s := range []struct {
		first string
		cut   uint16
		tail  string
	}{
		{token, 108, `"\n\"x","logprobs":null,"finish_reason":"stop","stop_reason":151645,"token_ids":[1,2],"prompt_token_ids":null}],"usage":null}`},
		{token, 108, ` "a","finish_reason":"length"}],"x":1}`},
		{token, 107, `:  "a"}]}`},
		{token, 90, `]}`},
		{token, 184, `[1],"finish_reason":null}]}`},
		{token, 184, `[1,2]}],"usage":null}`},
		{token, 184, ` [1],"stop_reason":"x"}]}`},
		{`{"choices":[{"text":"a"}]}`, 20, `"b","text":"c"}]}`},
		{`{"choices":[{"finish_reason":"stop","text":"a"}]}`, 40, `"b"}]}`},
		{`{"object":"x","choices":[{"text":"a"}]}`, 33, `"b"}],"object":"y"}`},
		// The remembered tail must be read with the same seen keys and set nothing.
		{`{"choices":[{"text":"a","token_ids":[1],"stop_reason":null}]}`, 24, `"stop_reason":null,"token_ids":[1],"stop_reason":null}]}`},
		{`{"choices":[{"text":"a","token_ids":[1]}],"usage":null}`, 0, `{"usage":null,"choices":[{"text":"a","token_ids":[1]}],"usage":null}`},
		{`{"choices":[{"text":"a","token_ids":[1],"finish_reason":"stop"}]}`, 37, `2],"finish_reason":"stop"}]}`},
	} {
		f.Add([]byte(s.first), s.cut, []byte(s.tail))
	}
	f.Fuzz(func(t *testing.T, first []byte, cut uint16, tail []byte) {
		second := append(append([]byte(nil), first[:min(int(cut), len(first))]...), tail...)
		var prefix stream.ChunkPrefix
		// Each chunk after each (what one remembers from the other or from itself).
		for i, data := range [][]byte{first, second, second, first, first, second} {
			var after, alone stream.Chunk
			okAfter := stream.ParseChunkFastAfterForTest(data, &after, &prefix)
			okAlone := stream.ParseChunkFastForTest(data, &alone)
			if okAfter != okAlone {
				t.Fatalf("chunk %d %q (first %q): taken %v, alone %v", i, data, first, okAfter, okAlone)
			}
			if diff := cmp.Diff(alone, after, cmpopts.IgnoreUnexported(stream.Chunk{})); okAlone && diff != "" {
				t.Fatalf("chunk %d %q (first %q) (-alone +after):\n%s", i, data, first, diff)
			}
		}
	})
}
