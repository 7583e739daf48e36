package upstream

import (
	"encoding/json"
	"strconv"

	"github.com/stitchllm/stitch/internal/jsonappend"
)

// CompletionRequest is the body of POST /v1/completions on the token path.
// The zero values of optional fields are left out of the JSON so vLLM's defaults apply.
type CompletionRequest struct {
	Model  string
	Prompt []uint32 // token ids; vLLM neither tokenizes nor adds BOS
	// PromptPrefix, when non-empty, is the encoding of Prompt[:PromptPrefixIDs] already made (a
	// continuation keeps the previous turn's): each id as a JSON number followed by a comma. Only
	// the ids after it are encoded. It may encode all of Prompt: its last comma is then left
	// out.
	PromptPrefix    []byte
	PromptPrefixIDs int
	// MaxTokens is always sent: vLLM's default is 16.
	MaxTokens int
	// Temperature and TopP are raw JSON numbers as the client spelled them; nil leaves vLLM's default.
	Temperature json.RawMessage
	TopP        json.RawMessage
	Stream      bool
	// IncludeUsage asks for the final usage chunk (stream_options.include_usage).
	IncludeUsage bool
	// ReturnTokenIDs asks vLLM for per-chunk token_ids (and prompt_token_ids in the first chunk).
	ReturnTokenIDs bool
	StopTokenIDs   []uint32
	// CacheSalt scopes vLLM's prefix cache (one stable salt per tenant and model).
	CacheSalt string
	// StructuredOutputs is a raw JSON object for vLLM's structured_outputs (e.g. {"json": schema}).
	StructuredOutputs json.RawMessage
	// Seed is sent when non-nil.
	Seed *int64
	// Logprobs, when non-nil, asks for each generated token's logprob and this many most likely
	// alternatives (vLLM's logprobs: N, at most its --max-logprobs, 20 by default), with tokens
	// written as "token_id:N" (return_tokens_as_token_ids) so no alternative is lost to two ids
	// that decode alike.
	Logprobs *int
}

// AppendJSON appends the request's JSON encoding to dst. It allocates nothing beyond dst's growth.
func (r *CompletionRequest) AppendJSON(dst []byte) []byte {
	dst = r.appendHead(dst)
	dst = append(dst, r.prefix()...)
	return r.appendTail(dst)
}

// Parts returns the request's JSON encoding in parts whose concatenation is AppendJSON's: the
// part holding PromptPrefix is PromptPrefix itself, so a long continuation's ids already encoded
// are sent without being copied.
func (r *CompletionRequest) Parts() [][]byte {
	head := r.appendHead(make([]byte, 0, 32+len(r.Model)))
	tail := r.appendTail(make([]byte, 0, 160+7*(len(r.Prompt)-r.prefixIDs())+len(r.CacheSalt)+len(r.StructuredOutputs)))
	if p := r.prefix(); len(p) > 0 {
		return [][]byte{head, p, tail}
	}
	return [][]byte{head, tail}
}

// prefixIDs is the number of leading ids PromptPrefix encodes, or 0 when it cannot be used.
func (r *CompletionRequest) prefixIDs() int {
	if len(r.PromptPrefix) == 0 || r.PromptPrefixIDs <= 0 || r.PromptPrefixIDs > len(r.Prompt) {
		return 0
	}
	return r.PromptPrefixIDs
}

// prefix is the part of the prompt array's contents PromptPrefix gives: without its last comma
// when no id follows it.
func (r *CompletionRequest) prefix() []byte {
	switch n := r.prefixIDs(); {
	case n == 0:
		return nil
	case n == len(r.Prompt):
		return r.PromptPrefix[:len(r.PromptPrefix)-1]
	}
	return r.PromptPrefix
}

// appendHead appends the encoding up to the prompt's ids: {"model":…,"prompt":[
func (r *CompletionRequest) appendHead(dst []byte) []byte {
	dst = append(dst, `{"model":`...)
	dst = appendJSONString(dst, r.Model)
	return append(dst, `,"prompt":[`...)
}

// appendTail appends the prompt's ids after the prefix and the rest of the object.
func (r *CompletionRequest) appendTail(dst []byte) []byte {
	if tail := r.Prompt[r.prefixIDs():]; len(tail) > 0 {
		dst = jsonappend.Uint32sEach(dst, tail, ',')
		dst = dst[:len(dst)-1] // the last id's comma
	}
	dst = append(dst, `],"max_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.MaxTokens), 10)
	if len(r.Temperature) > 0 {
		dst = append(dst, `,"temperature":`...)
		dst = append(dst, r.Temperature...)
	}
	if len(r.TopP) > 0 {
		dst = append(dst, `,"top_p":`...)
		dst = append(dst, r.TopP...)
	}
	if r.Stream {
		dst = append(dst, `,"stream":true`...)
		if r.IncludeUsage {
			dst = append(dst, `,"stream_options":{"include_usage":true}`...)
		}
	}
	if r.ReturnTokenIDs {
		dst = append(dst, `,"return_token_ids":true`...)
	}
	if len(r.StopTokenIDs) > 0 {
		dst = append(dst, `,"stop_token_ids":`...)
		dst = jsonappend.Uint32s(dst, r.StopTokenIDs)
	}
	if r.CacheSalt != "" {
		dst = append(dst, `,"cache_salt":`...)
		dst = appendJSONString(dst, r.CacheSalt)
	}
	if len(r.StructuredOutputs) > 0 {
		dst = append(dst, `,"structured_outputs":`...)
		dst = append(dst, r.StructuredOutputs...)
	}
	if r.Seed != nil {
		dst = append(dst, `,"seed":`...)
		dst = strconv.AppendInt(dst, *r.Seed, 10)
	}
	if r.Logprobs != nil {
		dst = append(dst, `,"logprobs":`...)
		dst = strconv.AppendInt(dst, int64(*r.Logprobs), 10)
		dst = append(dst, `,"return_tokens_as_token_ids":true`...)
	}
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte { return jsonappend.String(dst, s) }
