package stream_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/stream"
)

// vllmBody builds a vLLM completions stream: a first chunk echoing a
// promptLen-id prompt, then n chunks of one token id each, usage, [DONE].
func vllmBody(promptLen, n int) []byte {
	var b bytes.Buffer
	prompt := make([]string, promptLen)
	for i := range prompt {
		prompt[i] = fmt.Sprint(1000 + i%90000)
	}
	for i := range n {
		pids := "null"
		if i == 0 {
			pids = "[" + strings.Join(prompt, ",") + "]"
		}
		finish := "null"
		if i == n-1 {
			finish = `"stop"`
		}
		fmt.Fprintf(&b, `data: {"id":"cmpl-5f0c1e2d3b4a49c8a7e6d5c4b3a29180","object":"text_completion","created":1767225600,"model":"qwen3","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":%s,"stop_reason":null,"token_ids":[%d],"prompt_token_ids":%s}],"usage":null}`+"\n\n", finish, 1000+i%5000, pids)
	}
	fmt.Fprintf(&b, `data: {"id":"cmpl-5f0c1e2d3b4a49c8a7e6d5c4b3a29180","object":"text_completion","created":1767225600,"model":"qwen3","choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":null}}`+"\n\ndata: [DONE]\n\n", promptLen, promptLen+n, n)
	return b.Bytes()
}

func BenchmarkSSEDecode(b *testing.B) {
	for _, size := range []struct{ prompt, out int }{{100, 100}, {4000, 1000}} {
		body := vllmBody(size.prompt, size.out)
		name := fmt.Sprintf("prompt=%d/out=%d", size.prompt, size.out)
		b.Run("events/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				d := stream.NewDecoder(bytes.NewReader(body))
				for {
					if _, err := d.Next(); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("chunks/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				r := stream.NewChunkReader(bytes.NewReader(body))
				for {
					if _, err := r.Next(); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkPipeline measures one whole turn as the server runs it: chunks →
// Qwen3 family parser with the real DecodeStream → Emitter → Encoder. Reported per
// turn; divide by the token count (1000) for the per-token cost.
func BenchmarkPipeline(b *testing.B) {
	tok := tokenizer(b)
	ids := tok.Encode("<think>\n" + strings.Repeat("Let me reason about this step by step. ", 60) + "\n</think>\n\n" +
		strings.Repeat("Here is a thoughtful answer with some detail. ", 40) +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call><|im_end|>")
	var body bytes.Buffer
	for i, id := range ids {
		finish := "null"
		if i == len(ids)-1 {
			finish = `"stop"`
		}
		fmt.Fprintf(&body, `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"qwen3","choices":[{"index":0,"text":"x","logprobs":null,"finish_reason":%s,"stop_reason":null,"token_ids":[%d],"prompt_token_ids":null}],"usage":null}`+"\n\n", finish, id)
	}
	body.WriteString("data: [DONE]\n\n")
	data := body.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		conv := stream.NewConverter(stream.ConverterOptions{
			Output:  mustQwen3Parser(b, tok, tok.NewDecodeStream(), nil),
			Emitter: stream.EmitterOptions{NewID: counterIDs(), Now: fixedNow},
		})
		enc := stream.NewEncoder(io.Discard)
		r := stream.NewChunkReader(bytes.NewReader(data))
		var events []stream.Event
		events = conv.Start(events[:0])
		_ = enc.EncodeAll(events)
		for {
			ch, err := r.Next()
			if err == io.EOF {
				_ = enc.EncodeAll(conv.End(events[:0]))
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			events = conv.Chunk(events[:0], ch)
			if err := enc.EncodeAll(events); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
}
