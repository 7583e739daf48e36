package vllmgrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/upstream"
	pb "github.com/stitchllm/stitch/upstream/vllmgrpc/enginepb"
)

// ErrCacheSaltUnsupported is returned for a request with a cache salt: the engine interface has no
// field for it, and sending it unsalted would share one prefix cache across tenants.
var ErrCacheSaltUnsupported = errors.New("vllmgrpc: the gRPC engine interface has no cache_salt; refusing to send a salted request unsalted")

// ErrLoRAUnsupported means a configuration needs a LoRA adapter, which the interface cannot name.
var ErrLoRAUnsupported = errors.New("vllmgrpc: the gRPC engine interface has no LoRA adapter field")

// Config is what CheckConfig needs to know of stitch's configuration.
type Config struct {
	// Tenants is the number of tenants that may share this upstream (1 in dev mode).
	Tenants int
	// PerTenantCacheSalt reports whether requests are salted per tenant (stitch's default when
	// several tenants exist).
	PerTenantCacheSalt bool
	// LoRAProfiles names the model profiles that route to a LoRA adapter.
	LoRAProfiles []string
}

// CheckConfig refuses, at startup, a configuration the gRPC interface cannot honour: several tenants
// (which need per-tenant cache salts to keep their prefix caches apart) or any LoRA profile.
func CheckConfig(cfg Config) error {
	var errs []error
	if cfg.Tenants > 1 || cfg.PerTenantCacheSalt {
		errs = append(errs, fmt.Errorf("%w (%d tenants configured); use the HTTP upstream", ErrCacheSaltUnsupported, cfg.Tenants))
	}
	if len(cfg.LoRAProfiles) > 0 {
		errs = append(errs, fmt.Errorf("%w (profiles %v); use the HTTP upstream", ErrLoRAUnsupported, cfg.LoRAProfiles))
	}
	return errors.Join(errs...)
}

// Chunk is one message of a generation stream. A stream ends with exactly one Chunk whose
// FinishReason is set.
type Chunk struct {
	// TokenIDs are the ids generated since the previous chunk (may be empty in the final one).
	TokenIDs []uint32
	// PromptTokens, CompletionTokens and CachedTokens are the engine's running counts.
	PromptTokens, CompletionTokens, CachedTokens int
	// FinishReason is "stop", "length", "abort" or "error" on the final chunk, else "".
	FinishReason string
	// StopTokenID or StopString is the stop condition that matched (final chunk only).
	StopTokenID *uint32
	StopString  *string
	// Logprobs are TokenIDs' logprobs when the request asked for them (SamplingParams.logprobs).
	Logprobs *pb.OutputLogProbs
}

// Stream is a running generation. Recv returns chunks until the final one, then io.EOF. Close
// must be called; closing a stream that has not finished aborts the request on the engine.
type Stream struct {
	c         *Client
	requestID string
	stream    pb.VllmEngine_GenerateClient
	cancel    context.CancelFunc
	stopAbort func() bool
	received  int // output ids so far, to split GenerateComplete's output_ids
	peeked    *pb.GenerateResponse

	mu       sync.Mutex
	finished bool
	closed   bool
}

// RequestID is the id the request runs under on the engine.
func (s *Stream) RequestID() string { return s.requestID }

// Generate starts req on the engine, streaming. It fails at once for what the interface cannot
// carry (a cache salt) or what the request cannot mean. Cancelling ctx aborts the request: the
// stream's RPC is cancelled and an Abort names the request id.
func (c *Client) Generate(ctx context.Context, req *upstream.CompletionRequest) (*Stream, error) {
	if req.CacheSalt != "" {
		if c.salt == nil {
			return nil, ErrCacheSaltUnsupported
		}
		if err := c.salt(ctx, req.CacheSalt); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCacheSaltUnsupported, err)
		}
		unsalted := *req
		unsalted.CacheSalt = ""
		req = &unsalted
	}
	greq, err := c.buildRequest(req)
	if err != nil {
		return nil, err
	}
	return c.generate(ctx, greq)
}

func (c *Client) generate(ctx context.Context, greq *pb.GenerateRequest) (*Stream, error) {
	sctx, cancel := context.WithCancel(ctx)
	st := &Stream{c: c, requestID: greq.GetRequestId(), cancel: cancel}
	// A client that goes away mid-stream: tell the engine by id, as well as by cancelling the RPC.
	st.stopAbort = context.AfterFunc(ctx, st.abortIfRunning)
	gs, err := c.engine.Generate(sctx, greq)
	if err != nil {
		st.stopAbort()
		cancel()
		return nil, mapError("generate", err)
	}
	st.stream = gs
	// Surface a refused request (validation, context length) here, as the HTTP client does with a
	// non-2xx status: a refusal is a trailers-only response, which has no header metadata.
	md, err := gs.Header()
	if err == nil && md == nil {
		msg, rerr := gs.Recv()
		if rerr != nil {
			err = rerr
		} else {
			st.peeked = msg
		}
	}
	if err != nil {
		st.stopAbort()
		cancel()
		return nil, mapError("generate", err)
	}
	return st, nil
}

// Recv returns the next chunk, or io.EOF after the final one.
func (s *Stream) Recv() (Chunk, error) {
	s.mu.Lock()
	done := s.finished
	s.mu.Unlock()
	if done {
		return Chunk{}, io.EOF
	}
	msg, err := s.peeked, error(nil)
	if msg != nil {
		s.peeked = nil
	} else {
		msg, err = s.stream.Recv()
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Chunk{}, fmt.Errorf("vllmgrpc generate %s: %w", s.requestID, io.ErrUnexpectedEOF)
		}
		return Chunk{}, mapError("generate", err)
	}
	switch r := msg.GetResponse().(type) {
	case *pb.GenerateResponse_Chunk:
		ch := r.Chunk
		s.received += len(ch.GetTokenIds())
		return Chunk{TokenIDs: ch.GetTokenIds(), PromptTokens: int(ch.GetPromptTokens()),
			CompletionTokens: int(ch.GetCompletionTokens()), CachedTokens: int(ch.GetCachedTokens()),
			Logprobs: ch.GetOutputLogprobs()}, nil
	case *pb.GenerateResponse_Complete:
		cp := r.Complete
		s.mu.Lock()
		s.finished = true
		s.mu.Unlock()
		out := Chunk{PromptTokens: int(cp.GetPromptTokens()), CompletionTokens: int(cp.GetCompletionTokens()),
			CachedTokens: int(cp.GetCachedTokens()), FinishReason: cp.GetFinishReason()}
		if out.FinishReason == "" {
			out.FinishReason = "stop"
		}
		// The final message repeats all output ids; pass on only those not streamed yet (and
		// their logprobs, whether it lists those of every id or only of the new ones).
		if ids := cp.GetOutputIds(); len(ids) > s.received {
			out.TokenIDs = ids[s.received:]
			out.Logprobs = tailLogprobs(cp.GetOutputLogprobs(), len(ids), s.received)
			s.received = len(ids)
		}
		switch m := cp.GetMatchedStop().(type) {
		case *pb.GenerateComplete_MatchedTokenId:
			out.StopTokenID = &m.MatchedTokenId
		case *pb.GenerateComplete_MatchedStopStr:
			out.StopString = &m.MatchedStopStr
		}
		return out, nil
	}
	return Chunk{}, fmt.Errorf("vllmgrpc generate %s: empty response message", s.requestID)
}

// tailLogprobs returns the logprobs of the ids after the first skip of total, from lp holding
// either all total or only those.
func tailLogprobs(lp *pb.OutputLogProbs, total, skip int) *pb.OutputLogProbs {
	if lp == nil || len(lp.GetTokenIds()) != total || skip == 0 {
		return lp
	}
	out := &pb.OutputLogProbs{TokenLogprobs: lp.GetTokenLogprobs(), TokenIds: lp.GetTokenIds()[skip:], TopLogprobs: lp.GetTopLogprobs()}
	if len(out.TokenLogprobs) == total {
		out.TokenLogprobs = out.TokenLogprobs[skip:]
	}
	if len(out.TopLogprobs) == total {
		out.TopLogprobs = out.TopLogprobs[skip:]
	}
	return out
}

// Close ends the stream; a request that has not finished is aborted on the engine.
func (s *Stream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.stopAbort() {
		s.abortIfRunning()
	}
	s.cancel()
	return nil
}

// abortIfRunning sends Abort for the request unless it already finished.
func (s *Stream) abortIfRunning() {
	s.mu.Lock()
	done := s.finished
	s.mu.Unlock()
	if done {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	_ = s.c.Abort(ctx, s.requestID) // best effort: the cancelled RPC also ends the request
}

// buildRequest maps the HTTP path's request onto GenerateRequest.
func (c *Client) buildRequest(req *upstream.CompletionRequest) (*pb.GenerateRequest, error) {
	if req.CacheSalt != "" {
		return nil, ErrCacheSaltUnsupported
	}
	sp := &pb.SamplingParams{
		// proto3 cannot leave top_p unset: send the engine's generation_config default when
		// GetModelInfo reported one (as vLLM's HTTP server applies it), else vLLM's own 1.
		TopP:              1,
		N:                 1,
		SkipSpecialTokens: true, // vLLM's default; the token path reads ids, not text
		StopTokenIds:      req.StopTokenIDs,
	}
	if tp := c.topP.Load(); tp != 0 {
		sp.TopP = math.Float32frombits(tp)
	}
	mt := uint32(max(req.MaxTokens, 0))
	if req.MaxTokens > 0 {
		sp.MaxTokens = &mt
	}
	if len(req.Temperature) > 0 {
		f, err := strconv.ParseFloat(string(req.Temperature), 32)
		if err != nil {
			return nil, badRequest("temperature", "temperature must be a number")
		}
		t := float32(f)
		sp.Temperature = &t
	}
	if len(req.TopP) > 0 {
		f, err := strconv.ParseFloat(string(req.TopP), 32)
		if err != nil {
			return nil, badRequest("top_p", "top_p must be a number")
		}
		sp.TopP = float32(f)
	}
	if req.Seed != nil {
		if *req.Seed < -1<<31 || *req.Seed > 1<<31-1 {
			return nil, badRequest("seed", "seed must fit in 32 bits on the gRPC upstream")
		}
		seed := int32(*req.Seed)
		sp.Seed = &seed
	}
	if req.Logprobs != nil {
		n := int32(max(min(*req.Logprobs, 1<<20), 0))
		sp.Logprobs = &n
	}
	if err := setConstraint(sp, req.StructuredOutputs); err != nil {
		return nil, err
	}
	return &pb.GenerateRequest{
		RequestId:      c.newID(),
		Input:          &pb.GenerateRequest_Tokenized{Tokenized: &pb.TokenizedInput{InputIds: req.Prompt}},
		SamplingParams: sp,
		Stream:         true,
	}, nil
}

// setConstraint maps vLLM's structured_outputs object ({"json": schema}, {"regex": …},
// {"choice": […]}, {"grammar": …}, {"structural_tag": …}, {"json_object": true}) onto the oneof.
// The interface holds one constraint; two are refused as vLLM refuses them.
func setConstraint(sp *pb.SamplingParams, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	so := gjson.ParseBytes(raw)
	if !so.IsObject() {
		return badRequest("structured_outputs", "structured_outputs must be an object")
	}
	n := 0
	so.ForEach(func(k, v gjson.Result) bool {
		if v.Type == gjson.Null {
			return true
		}
		switch k.String() {
		case "json":
			schema := v.Raw
			if v.Type == gjson.String {
				schema = v.String()
			}
			sp.Constraint = &pb.SamplingParams_JsonSchema{JsonSchema: schema}
		case "regex":
			sp.Constraint = &pb.SamplingParams_Regex{Regex: v.String()}
		case "grammar":
			sp.Constraint = &pb.SamplingParams_Grammar{Grammar: v.String()}
		case "structural_tag":
			sp.Constraint = &pb.SamplingParams_StructuralTag{StructuralTag: v.String()}
		case "json_object":
			// false is still a constraint field set (vLLM counts "not None"); it forces nothing.
			if v.Bool() {
				sp.Constraint = &pb.SamplingParams_JsonObject{JsonObject: true}
			}
		case "choice":
			var choices []string
			for _, x := range v.Array() {
				choices = append(choices, x.String())
			}
			sp.Constraint = &pb.SamplingParams_Choice{Choice: &pb.ChoiceConstraint{Choices: choices}}
		default:
			return true // options such as disable_fallback have no field; vLLM's defaults apply
		}
		n++
		return true
	})
	if n > 1 {
		return badRequest("structured_outputs", "You can only use one kind of structured outputs constraint but multiple are specified: %s", so.Raw)
	}
	return nil
}

func badRequest(param, format string, args ...any) error {
	return &upstream.StatusError{Status: 400, Body: errorBody(400, "BadRequestError", param, fmt.Sprintf(format, args...))}
}
