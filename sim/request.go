package sim

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// sampling holds the request fields shared by /v1/completions and /v1/chat/completions.
type sampling struct {
	maxTokens       int    // -1: until the context is full (chat without max_tokens)
	maxKey          string // the field that set maxTokens ("" when defaulted)
	stop            []string
	stopIDs         []uint32
	seed            int64
	salt            string
	ignoreEOS       bool
	skipSpecial     bool
	readCache       bool
	stream          bool
	includeUsage    bool
	continuousUsage bool
	returnTokenIDs  bool
	constraint      constraint
	// wantLogprobs asks for logprobs with logprobs alternatives per token (/v1/completions'
	// logprobs: N); tokensAsIDs writes tokens as "token_id:N" (return_tokens_as_token_ids).
	wantLogprobs bool
	logprobs     int
	tokensAsIDs  bool
}

// parseSampling reads and validates the sampling fields of body. maxKeys are the fields that may
// carry max_tokens, in priority order; defMax is the default when none is present (-1: to the end
// of the context).
func (s *Server) parseSampling(body []byte, defMax int, maxKeys ...string) (sampling, *apiError) {
	sp := sampling{maxTokens: defMax, seed: s.opts.Seed, skipSpecial: true, readCache: true}
	for _, k := range maxKeys {
		v := gjson.GetBytes(body, k)
		if !v.Exists() {
			continue
		}
		if v.Type == gjson.Null {
			// Newest vLLM's CompletionRequest.normalize_null_max_tokens turns null into the
			// default 16 (vllm/entrypoints/openai/completion/protocol.py); 0.11 and chat fill the
			// context.
			if s.opts.legacy() || defMax < 0 {
				sp.maxTokens = -1
			}
			break
		}
		n, ok := intValue(v)
		if !ok {
			return sp, badRequest(k, "%s must be an integer", k)
		}
		if n < 1 {
			return sp, badRequest(k, "max_tokens must be at least 1, got %d.", n)
		}
		sp.maxTokens, sp.maxKey = int(min(n, math.MaxInt32)), k
		break
	}
	if v := gjson.GetBytes(body, "temperature"); v.Exists() && v.Type != gjson.Null {
		if v.Type != gjson.Number || v.Float() < 0 {
			return sp, badRequest("temperature", "temperature must be non-negative, got %s.", v.Raw)
		}
	}
	if v := gjson.GetBytes(body, "top_p"); v.Exists() && v.Type != gjson.Null {
		if v.Type != gjson.Number || v.Float() <= 0 || v.Float() > 1 {
			return sp, badRequest("top_p", "top_p must be in (0, 1], got %s.", v.Raw)
		}
	}
	if v := gjson.GetBytes(body, "n"); v.Exists() && v.Type != gjson.Null {
		if n, ok := intValue(v); !ok || n != 1 {
			return sp, badRequest("n", "n must be 1 in the simulator, got %s.", v.Raw)
		}
	}
	switch v := gjson.GetBytes(body, "stop"); {
	case !v.Exists() || v.Type == gjson.Null:
	case v.Type == gjson.String:
		sp.stop = []string{v.String()}
	case v.IsArray():
		for _, x := range v.Array() {
			if x.Type != gjson.String {
				return sp, badRequest("stop", "stop must be a string or a list of strings")
			}
			sp.stop = append(sp.stop, x.String())
		}
	default:
		return sp, badRequest("stop", "stop must be a string or a list of strings")
	}
	if v := gjson.GetBytes(body, "stop_token_ids"); v.Exists() && v.Type != gjson.Null {
		if !v.IsArray() {
			return sp, badRequest("stop_token_ids", "stop_token_ids must be a list of integers")
		}
		var bad []string
		vocab := s.modelVocab()
		for _, x := range v.Array() {
			n, ok := intValue(x)
			if !ok || (s.opts.legacy() && (n < 0 || n > math.MaxUint32)) {
				return sp, badRequest("stop_token_ids", "stop_token_ids must be a list of integers")
			}
			if !s.opts.legacy() && (n < 0 || n >= vocab) {
				bad = append(bad, strconv.FormatInt(n, 10))
				continue
			}
			sp.stopIDs = append(sp.stopIDs, uint32(n))
		}
		if len(bad) > 0 {
			// SamplingParams._validate_stop_token_ids (vLLM PR #54196), against the model's vocab.
			list := "[" + strings.Join(bad, ", ") + "]"
			return sp, badRequest("stop_token_ids", "token_id(s) %s in stop_token_ids contain out-of-vocab token ids. Vocabulary size: %d (parameter=stop_token_ids, value=%s)", list, vocab, list)
		}
	}
	if v := gjson.GetBytes(body, "seed"); v.Exists() && v.Type != gjson.Null {
		n, ok := intValue(v)
		if !ok {
			return sp, badRequest("seed", "seed must be an integer")
		}
		sp.seed = n
	}
	if v := gjson.GetBytes(body, "cache_salt"); v.Exists() && v.Type != gjson.Null {
		if aerr := s.checkSalt(v); aerr != nil {
			return sp, aerr
		}
		sp.salt = v.String()
	}
	var errB *apiError
	boolField := func(key string, dst *bool) {
		v := gjson.GetBytes(body, key)
		if !v.Exists() || v.Type == gjson.Null || errB != nil {
			return
		}
		if v.Type != gjson.True && v.Type != gjson.False {
			errB = badRequest(key, "%s must be a boolean", key)
			return
		}
		*dst = v.Bool()
	}
	boolField("stream", &sp.stream)
	boolField("return_token_ids", &sp.returnTokenIDs)
	boolField("ignore_eos", &sp.ignoreEOS)
	boolField("skip_special_tokens", &sp.skipSpecial)
	if errB != nil {
		return sp, errB
	}
	if v := gjson.GetBytes(body, "stream_options"); v.Exists() && v.Type != gjson.Null {
		if !sp.stream {
			return sp, s.validatorError("stream_options", "Stream options can only be defined when `stream=True`.")
		}
		// vLLM's StreamOptions.include_usage defaults to true once stream_options is present.
		sp.includeUsage = true
		if iu := v.Get("include_usage"); iu.Exists() && iu.Type != gjson.Null {
			sp.includeUsage = iu.Bool()
		}
		sp.continuousUsage = sp.includeUsage && v.Get("continuous_usage_stats").Bool()
	}
	if v := gjson.GetBytes(body, "prompt_logprobs"); v.Exists() && v.Type != gjson.Null {
		if sp.stream {
			return sp, badRequest("prompt_logprobs", "`prompt_logprobs` are not available when `stream=True`.")
		}
		sp.readCache = false // vLLM skips prefix-cache reads to compute every prompt logprob
	}
	c, aerr := parseConstraint(gjson.GetBytes(body, "structured_outputs"))
	if aerr != nil {
		return sp, aerr
	}
	sp.constraint = c
	if gjson.GetBytes(body, "echo").Bool() {
		return sp, badRequest("echo", "echo is not supported by the simulator")
	}
	return sp, nil
}

// validatorError reports a failure of one of vLLM's request-model validators (pydantic
// model_validator): newest vLLM's RequestValidationError handler answers 400 with type
// "Bad Request" and the VLLMValidationError's parameter as param (vllm/entrypoints/openai/
// api_server.py validation_exception_handler). Its message wraps the validator's text in
// pydantic's "N validation error(s)" listing, whose layout has changed between releases; the
// simulator sends the validator's own text.
func (s *Server) validatorError(param, msg string) *apiError {
	e := badRequest(param, "%s", msg)
	if !s.opts.legacy() {
		e.typ = "Bad Request"
	}
	return e
}

// maxSaltChars is newest vLLM's cache_salt length limit, in characters (code points).
const maxSaltChars = 128

// checkSalt applies vLLM's validate_cache_salt (vllm/entrypoints/generate/base/protocol.py): a
// non-empty string of at most 128 characters without '@', '/', '\' or NUL. vLLM 0.11 only
// required a non-empty string.
func (s *Server) checkSalt(v gjson.Result) *apiError {
	if v.Type != gjson.String || v.String() == "" {
		return s.validatorError("cache_salt", "Parameter 'cache_salt' must be a non-empty string if provided.")
	}
	if s.opts.legacy() {
		return nil
	}
	salt := v.String()
	if utf8.RuneCountInString(salt) > maxSaltChars || strings.ContainsAny(salt, "@/\\\x00") {
		return s.validatorError("cache_salt", `Parameter 'cache_salt' must be at most 128 characters and must not contain '@', '/', '\\', or NUL.`)
	}
	return nil
}

// logprobsParam is genParams.logprobs: the alternatives per token, -1 for no logprobs.
func logprobsParam(sp sampling) int {
	if !sp.wantLogprobs {
		return -1
	}
	return sp.logprobs
}

// intValue returns v as an integer when it is a JSON number without a fractional part.
func intValue(v gjson.Result) (int64, bool) {
	if v.Type != gjson.Number {
		return 0, false
	}
	f := v.Float()
	if f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return v.Int(), true
}

// vocabSizer is an optional tokenizer capability used to reject out-of-vocabulary prompt ids:
// VocabSize is the tokenizer's max id + 1.
type vocabSizer interface{ VocabSize() int }

// modelVocab is the model's vocab size as vLLM's ModelConfig.get_vocab_size reports it: the
// configured VocabSize, else the tokenizer's (max id + 1).
func (s *Server) modelVocab() int64 {
	if s.opts.VocabSize > 0 {
		return int64(s.opts.VocabSize)
	}
	if vs, ok := s.tok.(vocabSizer); ok {
		return int64(vs.VocabSize())
	}
	return math.MaxUint32 + 1
}

// maxTokenID is the largest prompt id vLLM accepts: max(tokenizer max id, model vocab - 1)
// (vLLM's input processor; the model's embedding may be larger than the tokenizer).
func (s *Server) maxTokenID() int64 {
	limit := int64(-1)
	if vs, ok := s.tok.(vocabSizer); ok {
		limit = int64(vs.VocabSize()) - 1
	} else if s.opts.VocabSize == 0 {
		return math.MaxUint32
	}
	return max(limit, int64(s.opts.VocabSize)-1)
}

// parsePrompts reads /v1/completions' prompt: a string, a list of token ids, or a list of either.
func (s *Server) parsePrompts(body []byte) ([][]uint32, *apiError) {
	v := gjson.GetBytes(body, "prompt")
	if !v.Exists() || v.Type == gjson.Null || (v.Type == gjson.String && v.String() == "" && !s.opts.legacy()) {
		if s.opts.legacy() {
			return nil, badRequest("prompt", "At least one of `prompt` or `prompt_embeds` must be set.")
		}
		return nil, s.validatorError("prompt", "Either prompt or prompt_embeds must be provided and non-empty.")
	}
	if v.Type == gjson.String {
		return [][]uint32{s.tok.Encode(v.String())}, nil
	}
	if !v.IsArray() {
		return nil, badRequest("prompt", "prompt must be a string, a list of token ids, or a list of either")
	}
	first := v.Get("0")
	if !first.Exists() {
		return nil, badRequest("prompt", "Prompt cannot be empty")
	}
	if first.Type == gjson.Number {
		ids, err := s.tokenList(v)
		if err != nil {
			return nil, err
		}
		return [][]uint32{ids}, nil
	}
	var out [][]uint32
	var bad *apiError
	v.ForEach(func(_, it gjson.Result) bool {
		switch {
		case it.Type == gjson.String:
			out = append(out, s.tok.Encode(it.String()))
		case it.IsArray():
			ids, err := s.tokenList(it)
			if err != nil {
				bad = err
				return false
			}
			out = append(out, ids)
		default:
			bad = badRequest("prompt", "prompt must be a string, a list of token ids, or a list of either")
			return false
		}
		return true
	})
	return out, bad
}

// tokenList reads a JSON array of token ids.
func (s *Server) tokenList(v gjson.Result) ([]uint32, *apiError) {
	limit := s.maxTokenID()
	ids := make([]uint32, 0, strings.Count(v.Raw, ",")+1)
	var bad *apiError
	v.ForEach(func(_, x gjson.Result) bool {
		// Fast path: a plain decimal id; anything else goes through the float check.
		n, err := strconv.ParseInt(x.Raw, 10, 64)
		ok := err == nil && x.Type == gjson.Number
		if !ok {
			n, ok = intValue(x)
		}
		if !ok || n < 0 {
			bad = badRequest("prompt", "token ids must be non-negative integers, got %s", x.Raw)
			return false
		}
		if n > limit {
			bad = badRequest("prompt", "Token id %d is out of vocabulary", n)
			return false
		}
		ids = append(ids, uint32(n))
		return true
	})
	return ids, bad
}

// checkLength applies newest vLLM's TokenizeParams checks (vllm/renderers/params.py): the
// requested output may not exceed the context, and the prompt must fit in what the output leaves.
// The messages end with VLLMValidationError's " (parameter=…, value=…)" suffix.
func (s *Server) checkLength(sp sampling, n int) *apiError {
	limit := s.opts.MaxModelLen
	out := max(sp.maxTokens, 0) // no max_tokens on chat: 0 requested
	key := sp.maxKey
	if key == "" {
		key = "max_tokens" // /v1/completions' default 16
	}
	if out > limit {
		return badRequest(key, "%s=%d cannot be greater than max_model_len=%d. Please request fewer output tokens. (parameter=%s, value=%d)",
			key, out, limit, key, out)
	}
	if n > limit-out {
		return badRequest("input_tokens", "You passed %d input tokens and requested %d output tokens. However, the model's context length is only %d tokens, resulting in a maximum input length of %d tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=%d)",
			n, out, limit, limit-out, n)
	}
	return nil
}

// genParamsFor checks prompt against the context length and returns its generation parameters.
func (s *Server) genParamsFor(sp sampling, prompt []uint32, endpoint string) (genParams, *apiError) {
	n, limit := len(prompt), s.opts.MaxModelLen
	if !s.opts.legacy() {
		if aerr := s.checkLength(sp, n); aerr != nil {
			return genParams{}, aerr
		}
	}
	if n == 0 {
		return genParams{}, badRequest("prompt", "The decoder prompt cannot be empty")
	}
	if n > limit {
		return genParams{}, badRequest("prompt", "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", limit, n)
	}
	maxTokens := sp.maxTokens
	if maxTokens < 0 {
		maxTokens = limit - n
	}
	if maxTokens < 1 {
		return genParams{}, badRequest("max_tokens", "max_tokens must be at least 1, got %d.", maxTokens)
	}
	if n+maxTokens > limit {
		return genParams{}, badRequest("max_tokens", "'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).", maxTokens, limit, n, maxTokens, limit, n)
	}
	return genParams{
		endpoint:    endpoint,
		prompt:      prompt,
		maxTokens:   maxTokens,
		stop:        sp.stop,
		stopIDs:     sp.stopIDs,
		seed:        sp.seed,
		salt:        sp.salt,
		ignoreEOS:   sp.ignoreEOS,
		skipSpecial: sp.skipSpecial,
		readCache:   sp.readCache,
		constraint:  sp.constraint,
		logprobs:    logprobsParam(sp),
		tokensAsIDs: sp.tokensAsIDs,
	}, nil
}
