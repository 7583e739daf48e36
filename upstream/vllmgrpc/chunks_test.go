package vllmgrpc_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stream"
	"github.com/stitchllm/stitch/upstream"
)

// copyChunk keeps what a chunk says (readers reuse their chunk).
func copyChunk(c *stream.Chunk) stream.Chunk {
	out := stream.Chunk{TokenIDs: append([]uint32(nil), c.TokenIDs...), PromptTokens: c.PromptTokens, Text: c.Text,
		FinishReason: c.FinishReason, StopReason: append([]byte(nil), c.StopReason...), Err: c.Err}
	for _, lp := range c.Logprobs {
		lp.Top = append([]stream.TopLogprob(nil), lp.Top...)
		out.Logprobs = append(out.Logprobs, lp)
	}
	if c.Usage != nil {
		u := *c.Usage
		u.CachedTokens = 0 // the second request of a pair finds more in the prefix cache
		out.Usage = &u
	}
	return out
}

func drain(t *testing.T, next func() (*stream.Chunk, error)) []stream.Chunk {
	t.Helper()
	var out []stream.Chunk
	for {
		c, err := next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		out = append(out, copyChunk(c))
	}
}

// TestChunksEqualSSE: the typed chunk path (CompletionChunks: protobuf → stream.Chunk) yields,
// chunk for chunk, what the SSE adapter's text yields through stream.ChunkReader for the same
// request — ids, finish and stop reasons, logprobs with their alternatives, the usage chunk — so
// the server reads the same stream over gRPC without the SSE round trip.
func TestChunksEqualSSE(t *testing.T) {
	p := startSim(t, sim.Options{Fast: true, StreamInterval: 3})
	ctx := context.Background()
	seed := int64(7)
	two, zero := 2, 0
	tests := []struct {
		name string
		req  upstream.CompletionRequest
	}{
		{"eos", upstream.CompletionRequest{Prompt: chatPrompt(t, "Tell me about Paris"), MaxTokens: 400, Seed: &seed}},
		{"length", upstream.CompletionRequest{Prompt: chatPrompt(t, "Tell me about Rome"), MaxTokens: 5, Seed: &seed}},
		{"stop id", upstream.CompletionRequest{Prompt: chatPrompt(t, "Tell me about Oslo"), MaxTokens: 400, Seed: &seed, StopTokenIDs: []uint32{13}}},
		{"logprobs", upstream.CompletionRequest{Prompt: chatPrompt(t, "Tell me about Lima"), MaxTokens: 40, Seed: &seed, Logprobs: &two}},
		{"logprobs 0", upstream.CompletionRequest{Prompt: chatPrompt(t, "Tell me about Kyiv"), MaxTokens: 20, Seed: &seed, Logprobs: &zero}},
		{"no usage", upstream.CompletionRequest{Prompt: chatPrompt(t, "Tell me about Bern"), MaxTokens: 30, Seed: &seed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.Model, req.Stream, req.IncludeUsage, req.ReturnTokenIDs = "qwen3", true, !strings.HasPrefix(tt.name, "no usage"), true
			body, err := p.grpc.Completions(ctx, req.Parts())
			if err != nil {
				t.Fatal(err)
			}
			cr := stream.NewChunkReader(body)
			viaSSE := drain(t, cr.Next)
			body.Close()
			cs, err := p.grpc.CompletionChunks(ctx, &req)
			if err != nil {
				t.Fatal(err)
			}
			typed := drain(t, cs.Next)
			cs.Close()
			if len(viaSSE) < 2 {
				t.Fatalf("the SSE path gave %d chunks", len(viaSSE))
			}
			if diff := cmp.Diff(viaSSE, typed, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(stream.Chunk{})); diff != "" {
				t.Errorf("typed chunks differ from the SSE path's (-sse +typed):\n%s", diff)
			}
			if tt.req.Logprobs != nil && len(typed[0].Logprobs) == 0 {
				t.Errorf("no logprobs on the first chunk")
			}
		})
	}
}
