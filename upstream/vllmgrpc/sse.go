package vllmgrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/internal/jsonappend"
	"github.com/stitchllm/stitch/upstream"
	pb "github.com/stitchllm/stitch/upstream/vllmgrpc/enginepb"
)

// Completions has the HTTP client's signature: body is an encoded upstream.CompletionRequest (in
// parts), and the answer is the SSE stream vLLM's /v1/completions sends for it, built from the gRPC
// chunks: one event per chunk with choices[0].token_ids (return_token_ids; never the
// prompt_token_ids echo, which the engine does not send and stitch does not use), finish_reason and stop_reason on the last, a usage event when
// stream_options.include_usage is set, then [DONE]. "text" is always "" (the engine does not
// detokenize). Closing the reader before the end aborts the request.
//
// A non-stream body is answered as a stream all the same; the server's token path always streams.
func (c *Client) Completions(ctx context.Context, body [][]byte) (io.ReadCloser, error) {
	req, opts, err := parseCompletionBody(bytes.Join(body, nil))
	if err != nil {
		return nil, err
	}
	// The watchdog's first-byte bound covers Generate, which waits for the engine's first message
	// (prefill); its idle bound covers each later Recv.
	return c.watch.Open(ctx, func(ctx context.Context) (io.ReadCloser, error) {
		st, err := c.Generate(ctx, req)
		if err != nil {
			return nil, err
		}
		return &sseReader{st: st, model: req.Model, opts: opts}, nil
	})
}

// sseOptions are the request fields that shape the SSE answer.
type sseOptions struct {
	includeUsage   bool
	returnTokenIDs bool
}

// parseCompletionBody reads the fields of a /v1/completions body that the token path sends.
func parseCompletionBody(body []byte) (*upstream.CompletionRequest, sseOptions, error) {
	var opts sseOptions
	if !gjson.ValidBytes(body) {
		return nil, opts, badRequest("", "JSON decode error: the body must be a JSON object")
	}
	root := gjson.ParseBytes(body)
	req := &upstream.CompletionRequest{Model: root.Get("model").String(), Stream: true}
	prompt := root.Get("prompt")
	if !prompt.IsArray() {
		return nil, opts, badRequest("prompt", "the gRPC upstream takes the prompt as a list of token ids")
	}
	ids, ok := parseIDs(prompt.Raw)
	if !ok {
		return nil, opts, badRequest("prompt", "prompt token ids must be non-negative integers")
	}
	req.Prompt = ids
	req.MaxTokens = int(root.Get("max_tokens").Int())
	if v := root.Get("temperature"); v.Type == gjson.Number {
		req.Temperature = json.RawMessage(v.Raw)
	}
	if v := root.Get("top_p"); v.Type == gjson.Number {
		req.TopP = json.RawMessage(v.Raw)
	}
	for _, v := range root.Get("stop_token_ids").Array() {
		req.StopTokenIDs = append(req.StopTokenIDs, uint32(v.Uint()))
	}
	req.CacheSalt = root.Get("cache_salt").String()
	if v := root.Get("structured_outputs"); v.IsObject() {
		req.StructuredOutputs = json.RawMessage(v.Raw)
	}
	if v := root.Get("seed"); v.Type == gjson.Number {
		seed := v.Int()
		req.Seed = &seed
	}
	if v := root.Get("logprobs"); v.Type == gjson.Number {
		n := int(v.Int())
		req.Logprobs = &n
	}
	opts.includeUsage = root.Get("stream_options.include_usage").Bool()
	opts.returnTokenIDs = root.Get("return_token_ids").Bool()
	return req, opts, nil
}

// parseIDs reads a JSON array of plain non-negative integers below 2³² (no sign, fraction,
// exponent or leading zero) in one pass: the prompt of a long turn has 100k of them.
func parseIDs(raw string) ([]uint32, bool) {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, false
	}
	body := raw[1 : len(raw)-1]
	ids := make([]uint32, 0, len(body)/7+1)
	const (
		expect   = iota // after '[' or ','
		inNum           // inside a number
		afterNum        // whitespace after a number
	)
	state, commas := expect, 0
	var n uint64
	var leadZero bool
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case '0' <= c && c <= '9':
			switch state {
			case expect:
				n, leadZero, state = uint64(c-'0'), c == '0', inNum
			case inNum:
				if leadZero {
					return nil, false
				}
				if n = n*10 + uint64(c-'0'); n > math.MaxUint32 {
					return nil, false
				}
			default:
				return nil, false
			}
		case c == ',':
			switch state {
			case expect:
				return nil, false
			case inNum:
				ids = append(ids, uint32(n))
			}
			state = expect
			commas++
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			if state == inNum {
				ids = append(ids, uint32(n))
				state = afterNum
			}
		default:
			return nil, false
		}
	}
	switch {
	case state == inNum:
		ids = append(ids, uint32(n))
	case state == expect && commas > 0: // a trailing comma
		return nil, false
	}
	return ids, true
}

// sseReader renders a Stream as vLLM's SSE bytes, one event per Read refill.
type sseReader struct {
	st    *Stream
	model string
	opts  sseOptions

	buf   []byte
	off   int
	final Chunk
	state int // 0 streaming, 1 usage/done pending, 2 all written
}

func (r *sseReader) Read(p []byte) (int, error) {
	for r.off == len(r.buf) {
		if r.state == 2 {
			return 0, io.EOF
		}
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

func (r *sseReader) Close() error { return r.st.Close() }

// fill writes the next event(s) into buf.
func (r *sseReader) fill() error {
	r.buf, r.off = r.buf[:0], 0
	if r.state == 1 {
		if r.opts.includeUsage {
			r.buf = append(r.buf, "data: "...)
			r.buf = r.appendHead(r.buf)
			r.buf = append(r.buf, `,"choices":[],"usage":`...)
			r.buf = appendUsage(r.buf, r.final)
			r.buf = append(r.buf, "}\n\n"...)
		}
		r.buf = append(r.buf, "data: [DONE]\n\n"...)
		r.state = 2
		return nil
	}
	ch, err := r.st.Recv()
	if err != nil {
		return err
	}
	r.buf = append(r.buf, "data: "...)
	r.buf = r.appendHead(r.buf)
	r.buf = append(r.buf, `,"choices":[{"index":0,"text":"","logprobs":`...)
	r.buf = appendLogprobs(r.buf, ch.Logprobs)
	r.buf = append(r.buf, `,"finish_reason":`...)
	if ch.FinishReason == "" {
		r.buf = append(r.buf, "null"...)
	} else {
		r.buf = jsonappend.String(r.buf, ch.FinishReason)
	}
	r.buf = append(r.buf, `,"stop_reason":`...)
	switch {
	case ch.StopTokenID != nil:
		r.buf = strconv.AppendUint(r.buf, uint64(*ch.StopTokenID), 10)
	case ch.StopString != nil:
		r.buf = jsonappend.String(r.buf, *ch.StopString)
	default:
		r.buf = append(r.buf, "null"...)
	}
	if r.opts.returnTokenIDs {
		// No prompt_token_ids echo: the engine sends none, and re-encoding the prompt (400 KB for
		// 100k ids) for a parser that never uses it would undo what the binary path saves.
		r.buf = append(r.buf, `,"token_ids":`...)
		r.buf = jsonappend.Uint32s(r.buf, nonNil(ch.TokenIDs))
	}
	r.buf = append(r.buf, "}]}\n\n"...)
	if ch.FinishReason != "" {
		r.final = ch
		r.state = 1
	}
	return nil
}

func (r *sseReader) appendHead(dst []byte) []byte {
	dst = append(dst, `{"id":"cmpl-`...)
	dst = append(dst, r.st.requestID...)
	dst = append(dst, `","object":"text_completion","model":`...)
	return jsonappend.String(dst, r.model)
}

// appendUsage writes vLLM's UsageInfo with prompt_tokens_details, as newest vLLM reports it.
func appendUsage(dst []byte, c Chunk) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(c.PromptTokens), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(c.PromptTokens+c.CompletionTokens), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(c.CompletionTokens), 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(c.CachedTokens), 10)
	return append(dst, "}}"...)
}

// appendLogprobs writes the engine's logprobs in vLLM's /v1/completions shape with
// return_tokens_as_token_ids (tokens as "token_id:N"; text_offset all 0, as there is no text), or
// null when there are none. The values and alternatives are appendChunkLogprobs' (the typed path):
// one mapping serves both, so the SSE and the chunks cannot disagree.
func appendLogprobs(dst []byte, lp *pb.OutputLogProbs) []byte {
	tls := appendChunkLogprobs(nil, lp)
	if len(tls) == 0 {
		return append(dst, "null"...)
	}
	dst = append(dst, `{"text_offset":[`...)
	for i := range tls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '0')
	}
	dst = append(dst, `],"token_logprobs":[`...)
	for i, tl := range tls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendLogprob(dst, tl.Logprob)
	}
	dst = append(dst, `],"tokens":[`...)
	for i, tl := range tls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendTokenID(dst, tl.ID)
	}
	dst = append(dst, `],"top_logprobs":[`...)
	for i, tl := range tls {
		if i > 0 {
			dst = append(dst, ',')
		}
		// vLLM's dict: the sampled token first, then the alternatives (tl.Top's order).
		dst = append(dst, '{')
		for j, alt := range tl.Top {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendTokenID(dst, alt.ID)
			dst = append(dst, ':')
			dst = appendLogprob(dst, alt.Logprob)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

func appendTokenID(dst []byte, id uint32) []byte {
	dst = append(dst, `"token_id:`...)
	dst = strconv.AppendUint(dst, uint64(id), 10)
	return append(dst, '"')
}

// appendLogprob writes a (clampLogprob'd) float32 logprob as Python writes its value.
func appendLogprob(dst []byte, f float64) []byte { return strconv.AppendFloat(dst, f, 'g', -1, 64) }

func nonNil(ids []uint32) []uint32 {
	if ids == nil {
		return []uint32{}
	}
	return ids
}
