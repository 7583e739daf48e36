package sim

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/stitchllm/stitch/upstream/vllmgrpc/enginepb"
)

// grpcEndpoint names gRPC generations in logs, metrics and record lines.
const grpcEndpoint = "grpc Generate"

// RegisterGRPC registers the simulator's vLLM gRPC engine service (vllm.grpc.engine.VllmEngine, as
// `vllm serve --grpc` serves it) on r. It shares the HTTP side's scripted model, prefix cache and
// metrics, so the same request gets the same ids and honest cached_tokens over either transport.
func (s *Server) RegisterGRPC(r grpc.ServiceRegistrar) {
	pb.RegisterVllmEngineServer(r, &engineService{s: s, running: make(map[string]context.CancelFunc)})
}

// engineService implements the gRPC service. running maps request ids to the cancel func of
// their generation, for Abort.
type engineService struct {
	pb.UnimplementedVllmEngineServer
	s *Server

	mu      sync.Mutex
	running map[string]context.CancelFunc
}

func (e *engineService) HealthCheck(context.Context, *pb.HealthCheckRequest) (*pb.HealthCheckResponse, error) {
	return &pb.HealthCheckResponse{Healthy: true, Message: "Health check passed"}, nil
}

func (e *engineService) GetModelInfo(context.Context, *pb.GetModelInfoRequest) (*pb.GetModelInfoResponse, error) {
	s := e.s
	info := &pb.GetModelInfoResponse{
		ModelPath:        s.opts.ModelRoot,
		IsGeneration:     true,
		MaxContextLength: uint32(s.opts.MaxModelLen),
		ServedModelName:  s.opts.ServedModelName,
		TokenizerPath:    s.opts.ModelRoot,
		ModelType:        "qwen3",
		Architectures:    []string{"Qwen3ForCausalLM"},
		// Qwen3's generation_config eos_token_id: <|im_end|> then <|endoftext|>; the sim stops on both.
		EosTokenIds:    []int32{int32(s.imEnd), int32(s.endOfText)},
		PadTokenId:     int32(s.endOfText),
		BosTokenId:     -1,
		MaxReqInputLen: int32(s.opts.MaxModelLen),
	}
	// gpt-oss's generation_config adds <|call|> (a stop id) to <|return|> and <|endoftext|>.
	for _, id := range s.genStops {
		info.EosTokenIds = append(info.EosTokenIds, int32(id))
	}
	if s.model.harmony {
		info.ModelType, info.Architectures = "gpt_oss", []string{"GptOssForCausalLM"}
	}
	if vs, ok := s.tok.(vocabSizer); ok {
		info.VocabSize = uint32(vs.VocabSize())
	}
	return info, nil
}

func (e *engineService) GetServerInfo(context.Context, *pb.GetServerInfoRequest) (*pb.GetServerInfoResponse, error) {
	e.mu.Lock()
	n := len(e.running)
	e.mu.Unlock()
	return &pb.GetServerInfoResponse{
		ActiveRequests: uint32(n),
		UptimeSeconds:  float64(time.Now().Unix() - e.s.created),
		ServerType:     "vllm-grpc",
		BlockSize:      int32(e.s.opts.BlockSize),
	}, nil
}

// Abort cancels the named running requests; unknown ids are ignored, as vLLM ignores them.
func (e *engineService) Abort(_ context.Context, req *pb.AbortRequest) (*pb.AbortResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range req.GetRequestIds() {
		if cancel, ok := e.running[id]; ok {
			cancel()
		}
	}
	return &pb.AbortResponse{}, nil
}

// Generate runs one request: a chunk with the first id, then chunks of Options.StreamInterval ids,
// then a GenerateComplete carrying the ids not sent yet. An aborted request ends with finish_reason "abort" while the caller still listens.
func (e *engineService) Generate(req *pb.GenerateRequest, stream grpc.ServerStreamingServer[pb.GenerateResponse]) error {
	s := e.s
	p, aerr := s.grpcParams(req)
	if aerr != nil {
		s.metrics.errors.WithLabelValues(fmt.Sprint(aerr.status)).Inc()
		return status.Error(grpcCode(aerr.status), aerr.message)
	}
	if s.opts.FailRate > 0 && s.faultDraw() < s.opts.FailRate {
		s.metrics.faults.WithLabelValues("fail").Inc()
		return status.Error(codes.Internal, "simulated failure (--fail-rate)")
	}
	id := req.GetRequestId()
	if id == "" {
		id = newID("grpc-")
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	e.mu.Lock()
	if _, dup := e.running[id]; dup {
		e.mu.Unlock()
		return status.Errorf(codes.AlreadyExists, "request id %s is already running", id)
	}
	e.running[id] = cancel
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.running, id)
		e.mu.Unlock()
	}()

	// Headers go out once the request is accepted, so the client tells a refusal (trailers only)
	// from a request waiting for its first token.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	g := s.startGeneration(p)
	defer s.logRequest(ctx, g)
	defer g.end()
	interval := s.opts.StreamInterval
	pending := make([]uint32, 0, interval)
	for g.finish == "" {
		if g.dropNow() {
			s.metrics.faults.WithLabelValues("drop").Inc()
			return status.Error(codes.Unavailable, "simulated connection drop (--drop-rate)")
		}
		tok, _, err := g.next(ctx)
		if err != nil {
			break // aborted: finish is "abort"
		}
		pending = append(pending, tok)
		// vLLM emits the first output at once and then every interval ids (and the last at the end).
		if len(g.out) > 1 && len(pending) < interval && g.finish == "" {
			continue
		}
		if g.finish != "" {
			break // the last ids go out with GenerateComplete's output_ids
		}
		chunk := &pb.GenerateStreamChunk{
			TokenIds:         pending,
			PromptTokens:     uint32(len(p.prompt)),
			CompletionTokens: uint32(len(g.out)),
			CachedTokens:     uint32(g.cached),
		}
		if p.logprobs >= 0 {
			chunk.OutputLogprobs = outputLogprobs(g.logprobsOf(len(g.out)-len(pending), len(g.out)))
		}
		if err := stream.Send(&pb.GenerateResponse{Response: &pb.GenerateResponse_Chunk{Chunk: chunk}}); err != nil {
			return err // the client is gone; end() records the abort
		}
		pending = make([]uint32, 0, interval)
	}
	if stream.Context().Err() != nil {
		return status.FromContextError(stream.Context().Err()).Err()
	}
	done := &pb.GenerateComplete{
		OutputIds:        nonNil(g.out),
		FinishReason:     g.finish,
		PromptTokens:     uint32(len(p.prompt)),
		CompletionTokens: uint32(len(g.out)),
		CachedTokens:     uint32(g.cached),
	}
	if p.logprobs >= 0 { // like output_ids, those of every output id
		done.OutputLogprobs = outputLogprobs(g.logprobsOf(0, len(g.out)))
	}
	switch r := g.stopReason.(type) {
	case uint32:
		done.MatchedStop = &pb.GenerateComplete_MatchedTokenId{MatchedTokenId: r}
	case string:
		done.MatchedStop = &pb.GenerateComplete_MatchedStopStr{MatchedStopStr: r}
	}
	return stream.Send(&pb.GenerateResponse{Response: &pb.GenerateResponse_Complete{Complete: done}})
}

// grpcParams validates a GenerateRequest with the HTTP path's rules.
func (s *Server) grpcParams(req *pb.GenerateRequest) (genParams, *apiError) {
	var prompt []uint32
	switch in := req.GetInput().(type) {
	case *pb.GenerateRequest_Tokenized:
		prompt = in.Tokenized.GetInputIds()
		if aerr := s.checkIDs(prompt); aerr != nil {
			return genParams{}, aerr
		}
	case *pb.GenerateRequest_Text:
		prompt = s.tok.Encode(in.Text)
	default:
		return genParams{}, badRequest("input", "GenerateRequest needs tokenized input or text")
	}
	sp := sampling{maxTokens: defaultMaxTokens, seed: s.opts.Seed, skipSpecial: true, readCache: true}
	in := req.GetSamplingParams()
	if in != nil {
		if in.MaxTokens != nil {
			if in.GetMaxTokens() < 1 {
				return genParams{}, badRequest("max_tokens", "max_tokens must be at least 1, got %d.", in.GetMaxTokens())
			}
			sp.maxTokens = int(min(in.GetMaxTokens(), 1<<31-1))
		}
		if in.Temperature != nil && in.GetTemperature() < 0 {
			return genParams{}, badRequest("temperature", "temperature must be non-negative, got %v.", in.GetTemperature())
		}
		if tp := in.GetTopP(); tp < 0 || tp > 1 {
			return genParams{}, badRequest("top_p", "top_p must be in (0, 1], got %v.", tp)
		}
		if n := in.GetN(); n > 1 {
			return genParams{}, badRequest("n", "n must be 1 in the simulator, got %d.", n)
		}
		sp.stop = in.GetStop()
		sp.stopIDs = in.GetStopTokenIds()
		if in.Seed != nil {
			sp.seed = int64(in.GetSeed())
		}
		sp.ignoreEOS = in.GetIgnoreEos()
		sp.skipSpecial = in.GetSkipSpecialTokens()
		if in.PromptLogprobs != nil {
			sp.readCache = false
		}
		if in.Logprobs != nil {
			if n := in.GetLogprobs(); n < 0 || n > maxLogprobs {
				return genParams{}, badRequest("logprobs", "Requested sample logprobs of %d, which is greater than max allowed: %d", n, maxLogprobs)
			}
			sp.wantLogprobs, sp.logprobs = true, int(in.GetLogprobs())
		}
		sp.constraint = grpcConstraint(in)
	}
	return s.genParamsFor(sp, prompt, grpcEndpoint)
}

// grpcConstraint reads the SamplingParams constraint oneof (the interface holds at most one, so
// vLLM's two-constraints rule cannot be broken over gRPC).
func grpcConstraint(in *pb.SamplingParams) constraint {
	switch c := in.GetConstraint().(type) {
	case *pb.SamplingParams_JsonSchema:
		return constraint{kind: "json", schema: gjson.Parse(c.JsonSchema)}
	case *pb.SamplingParams_Regex:
		return constraint{kind: "regex"}
	case *pb.SamplingParams_Grammar:
		return constraint{kind: "grammar"}
	case *pb.SamplingParams_StructuralTag:
		return constraint{kind: "structural_tag"}
	case *pb.SamplingParams_JsonObject:
		return constraint{kind: "json_object"}
	case *pb.SamplingParams_Choice:
		return constraint{kind: "choice", choices: c.Choice.GetChoices()}
	}
	return constraint{}
}

// checkIDs applies the HTTP path's token id rule to a tokenized prompt.
func (s *Server) checkIDs(ids []uint32) *apiError {
	vs, ok := s.tok.(vocabSizer)
	if !ok {
		return nil
	}
	limit := uint32(vs.VocabSize())
	for _, id := range ids {
		if id >= limit {
			return badRequest("prompt", "Token id %d is out of vocabulary", id)
		}
	}
	return nil
}

// grpcCode maps an HTTP status of the simulator's validation onto a gRPC code.
func grpcCode(httpStatus int) codes.Code {
	switch httpStatus {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusNotImplemented:
		return codes.Unimplemented
	}
	return codes.Internal
}
