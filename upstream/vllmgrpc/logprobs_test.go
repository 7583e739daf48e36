package vllmgrpc_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stream"
	"github.com/stitchllm/stitch/upstream"
)

// readLogprobs collects a token-path stream's ids and logprobs.
func readLogprobs(t *testing.T, chunks chunkSource) ([]uint32, []stream.TokenLogprob) {
	t.Helper()
	defer chunks.Close()
	var ids []uint32
	var lps []stream.TokenLogprob
	for {
		c, err := chunks.Next()
		if errors.Is(err, io.EOF) {
			return ids, lps
		}
		if err != nil {
			t.Fatalf("read stream: %v", err)
		}
		if c.Err != nil {
			t.Fatalf("in-stream error: %v", c.Err)
		}
		if len(c.Logprobs) != len(c.TokenIDs) {
			t.Fatalf("chunk has %d ids and %d logprobs", len(c.TokenIDs), len(c.Logprobs))
		}
		ids = append(ids, c.TokenIDs...)
		for _, lp := range c.Logprobs {
			lp.Top = append([]stream.TopLogprob(nil), lp.Top...)
			lps = append(lps, lp)
		}
	}
}

// Logprobs (vLLM's logprobs: N with return_tokens_as_token_ids over HTTP, SamplingParams.logprobs
// over gRPC) reach the server's parser alike over both transports: the same values, and the
// sampled token and its alternatives by id.
func TestLogprobsSameOverBothTransports(t *testing.T) {
	p := startSim(t, sim.Options{Fast: true, StreamInterval: 3})
	ctx := context.Background()
	n := 4
	seed := int64(7)
	req := upstream.CompletionRequest{Model: "qwen3", Prompt: chatPrompt(t, "Tell me about Lima"), MaxTokens: 60, Seed: &seed,
		Stream: true, IncludeUsage: true, ReturnTokenIDs: true, Logprobs: &n}
	body, err := p.http.Completions(ctx, req.Parts())
	if err != nil {
		t.Fatal(err)
	}
	httpIDs, httpLPs := readLogprobs(t, sseChunks(body))
	cs, err := p.grpc.CompletionChunks(ctx, &req)
	if err != nil {
		t.Fatal(err)
	}
	grpcIDs, grpcLPs := readLogprobs(t, cs)
	if len(httpIDs) == 0 || !cmp.Equal(httpIDs, grpcIDs) {
		t.Fatalf("ids differ: http %v grpc %v", httpIDs, grpcIDs)
	}
	for i, lp := range httpLPs {
		if lp.ID != httpIDs[i] || lp.Logprob > 0 || len(lp.Top) < n || len(lp.Top) > n+1 {
			t.Errorf("http logprob %d = %+v (id %d)", i, lp, httpIDs[i])
		}
	}
	// Compared as sets: the HTTP dict lists the sampled token first, the engine by rank.
	opt := cmp.Transformer("sorted", func(in []stream.TopLogprob) map[uint32]float64 {
		m := map[uint32]float64{}
		for _, a := range in {
			m[a.ID] = a.Logprob
		}
		return m
	})
	if diff := cmp.Diff(httpLPs, grpcLPs, opt); diff != "" {
		t.Errorf("logprobs differ (-http +grpc):\n%s", diff)
	}
}
