package vllmgrpc

import (
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc"

	"github.com/stitchllm/stitch/stream"
	pb "github.com/stitchllm/stitch/upstream/vllmgrpc/enginepb"
)

// cannedGenerate replays engine messages (only Recv is called).
type cannedGenerate struct {
	grpc.ClientStream
	msgs []*pb.GenerateResponse
	i    int
}

func (c *cannedGenerate) Recv() (*pb.GenerateResponse, error) {
	if c.i == len(c.msgs) {
		return nil, io.EOF
	}
	c.i++
	return c.msgs[c.i-1], nil
}

// cannedMessages is a 1,000-token generation in one-token chunks, each with 2 alternatives'
// logprobs when logprobs is set, then its GenerateComplete.
func cannedMessages(logprobs bool) []*pb.GenerateResponse {
	var msgs []*pb.GenerateResponse
	var all []uint32
	for i := range 1000 {
		id := uint32(1000 + i*37%90000)
		all = append(all, id)
		ch := &pb.GenerateStreamChunk{TokenIds: []uint32{id}, PromptTokens: 4000, CompletionTokens: uint32(i + 1)}
		if logprobs {
			ch.OutputLogprobs = &pb.OutputLogProbs{TokenIds: []uint32{id}, TokenLogprobs: []float32{-0.25},
				TopLogprobs: []*pb.TopLogProbs{{TokenIds: []uint32{id, id + 1, id + 2}, Values: []float32{-0.25, -1.5, -3.75}}}}
		}
		msgs = append(msgs, &pb.GenerateResponse{Response: &pb.GenerateResponse_Chunk{Chunk: ch}})
	}
	msgs = append(msgs, &pb.GenerateResponse{Response: &pb.GenerateResponse_Complete{Complete: &pb.GenerateComplete{
		OutputIds: all, PromptTokens: 4000, CompletionTokens: 1000, FinishReason: "stop"}}})
	return msgs
}

// BenchmarkReadGeneration measures what the server's reading of one gRPC generation costs, the
// engine's messages already received: through the SSE adapter and stream.ChunkReader (the path
// before CompletionChunks) and as typed chunks (issue 34: no SSE round trip).
func BenchmarkReadGeneration(b *testing.B) {
	opts := sseOptions{includeUsage: true, returnTokenIDs: true}
	for _, lp := range []bool{false, true} {
		msgs := cannedMessages(lp)
		name := "plain"
		if lp {
			name = "logprobs"
		}
		read := func(b *testing.B, next func() (*stream.Chunk, error)) {
			ids := 0
			for {
				c, err := next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				ids += len(c.TokenIDs)
			}
			if ids != 1000 {
				b.Fatalf("%d ids", ids)
			}
		}
		b.Run(name+"/sse", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st := &Stream{requestID: "r", stream: &cannedGenerate{msgs: msgs}}
				read(b, stream.NewChunkReader(&sseReader{st: st, model: "m", opts: opts}).Next)
			}
		})
		b.Run(name+"/typed", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st := &Stream{requestID: "r", stream: &cannedGenerate{msgs: msgs}}
				read(b, (&chunkReader{st: st, opts: opts}).Next)
			}
		})
	}
}
