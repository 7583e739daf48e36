package vllmgrpc

import (
	"context"
	"io"
	"math"
	"strconv"

	"github.com/stitchllm/stitch/internal/jsonappend"
	"github.com/stitchllm/stitch/stream"
	"github.com/stitchllm/stitch/upstream"
	pb "github.com/stitchllm/stitch/upstream/vllmgrpc/enginepb"
)

// CompletionChunks is the server's token path over gRPC with nothing in between: the request goes
// out as protobuf and the engine's messages come back as the chunks stream.ChunkReader would parse
// from vLLM's SSE for the same request (sseReader writes that SSE for the HTTP-shaped entries), so
// no SSE text is written here only to be parsed again (issue 34). TestChunksEqualSSE holds the two
// paths equal.
func (c *Client) CompletionChunks(ctx context.Context, req *upstream.CompletionRequest) (upstream.ChunkStream, error) {
	opts := sseOptions{includeUsage: req.Stream && req.IncludeUsage, returnTokenIDs: req.ReturnTokenIDs}
	return c.watch.OpenChunks(ctx, func(ctx context.Context) (upstream.ChunkStream, error) {
		st, err := c.Generate(ctx, req)
		if err != nil {
			return nil, err
		}
		return &chunkReader{st: st, opts: opts}, nil
	})
}

// chunkReader turns a Stream's messages into stream.Chunks: one per engine message, then the usage
// chunk (when asked for), then io.EOF. The chunk it returns is reused by the next call.
type chunkReader struct {
	st    *Stream
	opts  sseOptions
	ch    stream.Chunk
	usage stream.Usage
	final Chunk
	state int // 0 streaming, 1 usage pending, 2 done
}

func (r *chunkReader) Close() error { return r.st.Close() }

func (r *chunkReader) Next() (*stream.Chunk, error) {
	r.ch = stream.Chunk{TokenIDs: r.ch.TokenIDs[:0], Logprobs: r.ch.Logprobs[:0], StopReason: r.ch.StopReason[:0]}
	switch r.state {
	case 2:
		return nil, io.EOF
	case 1:
		r.state = 2
		if !r.opts.includeUsage {
			return nil, io.EOF
		}
		f := r.final
		r.usage = stream.Usage{PromptTokens: f.PromptTokens, CompletionTokens: f.CompletionTokens, CachedTokens: f.CachedTokens}
		r.ch.Usage = &r.usage
		return &r.ch, nil
	}
	ch, err := r.st.Recv()
	if err != nil {
		return nil, err
	}
	if r.opts.returnTokenIDs {
		r.ch.TokenIDs = append(r.ch.TokenIDs, ch.TokenIDs...)
	}
	r.ch.FinishReason = ch.FinishReason
	switch {
	case ch.StopTokenID != nil:
		r.ch.StopReason = strconv.AppendUint(r.ch.StopReason, uint64(*ch.StopTokenID), 10)
	case ch.StopString != nil:
		r.ch.StopReason = jsonappend.String(r.ch.StopReason, *ch.StopString)
	default:
		r.ch.StopReason = nil
	}
	r.ch.Logprobs = appendChunkLogprobs(r.ch.Logprobs, ch.Logprobs)
	if ch.FinishReason != "" {
		r.final, r.state = ch, 1
	}
	return &r.ch, nil
}

// appendChunkLogprobs maps the engine's logprobs as appendLogprobs writes them and stream reads
// them back: per token its id and value, its alternatives the sampled token first, then the
// others (the sampled one not repeated), values clamped to -9999 as vLLM writes -inf and NaN.
func appendChunkLogprobs(dst []stream.TokenLogprob, lp *pb.OutputLogProbs) []stream.TokenLogprob {
	ids := lp.GetTokenIds()
	if lp == nil || len(ids) == 0 {
		return dst
	}
	values, tops := lp.GetTokenLogprobs(), lp.GetTopLogprobs()
	for i, id := range ids {
		var v float32
		if i < len(values) {
			v = values[i]
		}
		tl := stream.TokenLogprob{ID: id, Logprob: clampLogprob(v)}
		tl.Top = append(tl.Top, stream.TopLogprob{ID: id, Logprob: tl.Logprob})
		if i < len(tops) {
			alts, altValues := tops[i].GetTokenIds(), tops[i].GetValues()
			for j, alt := range alts {
				if alt == id || j >= len(altValues) {
					continue
				}
				tl.Top = append(tl.Top, stream.TopLogprob{ID: alt, Logprob: clampLogprob(altValues[j])})
			}
		}
		dst = append(dst, tl)
	}
	return dst
}

// clampLogprob is a float32 logprob as vLLM writes it and stream reads it: -inf and NaN as -9999.
func clampLogprob(f float32) float64 {
	if math.IsNaN(float64(f)) || f < -9999 {
		return -9999
	}
	return float64(f)
}
