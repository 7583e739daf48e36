package sim

import (
	"strconv"

	"github.com/stitchllm/stitch/internal/jsonappend"
)

// JSON appenders for the hot path (one stream chunk per token). The output matches pydantic's
// model_dump_json, which vLLM uses: no spaces, UTF-8 unescaped, fields in declaration order.

// appendJSONString appends s as a JSON string, as pydantic writes it.
func appendJSONString(dst []byte, s string) []byte { return jsonappend.String(dst, s) }

// appendIDs appends ids as a JSON array, or null when ids is nil.
func appendIDs(dst []byte, ids []uint32) []byte {
	if ids == nil {
		return append(dst, "null"...)
	}
	return jsonappend.Uint32s(dst, ids)
}

// appendStopReason appends a stop_reason: null, a stop string, or a stop token id.
func appendStopReason(dst []byte, r any) []byte {
	switch v := r.(type) {
	case string:
		return appendJSONString(dst, v)
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10)
	}
	return append(dst, "null"...)
}

// appendNullableString appends s, or null when s is empty.
func appendNullableString(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, s)
}

// usage is vLLM's UsageInfo.
type usage struct {
	prompt, completion, cached int
}

func (u *usage) add(o usage) {
	u.prompt += o.prompt
	u.completion += o.completion
	u.cached += o.cached
}

// usageDetails says how a UsageInfo reports prompt_tokens_details.
type usageDetails int

const (
	// detailsCached: {"cached_tokens":N}, 0 included — newest vLLM with
	// --enable-prompt-tokens-details (PromptTokenUsageInfo set whenever num_cached_tokens is known).
	detailsCached usageDetails = iota
	// detailsNullWhenZero: null when nothing was cached — vLLM 0.11.
	detailsNullWhenZero
	// detailsOmitted: no prompt_tokens_details key — newest vLLM's per-chunk continuous usage
	// (serialized with exclude_unset).
	detailsOmitted
)

// appendUsage appends a UsageInfo object.
func appendUsage(dst []byte, u usage, d usageDetails) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.prompt), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.prompt+u.completion), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.completion), 10)
	switch {
	case d == detailsOmitted:
	case d == detailsCached || u.cached > 0:
		dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.cached), 10)
		dst = append(dst, '}')
	default:
		dst = append(dst, `,"prompt_tokens_details":null`...)
	}
	return append(dst, '}')
}

// finalDetails is how the layout reports prompt_tokens_details in a response's or a stream's
// final usage.
func (s *Server) finalDetails() usageDetails {
	if s.opts.legacy() {
		return detailsNullWhenZero
	}
	return detailsCached
}

// chunkUsageNull is what a stream chunk without usage ends with: vLLM 0.11 wrote
// "usage":null, newest vLLM omits the unset field.
func (s *Server) chunkUsageNull() string {
	if s.opts.legacy() {
		return `,"usage":null`
	}
	return ""
}

// respHeader is the id, object, created and model fields every response object starts with.
type respHeader struct {
	id, object, model string
	created           int64
}

func (h *respHeader) append(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, h.id)
	dst = append(dst, `,"object":`...)
	dst = appendJSONString(dst, h.object)
	dst = append(dst, `,"created":`...)
	dst = strconv.AppendInt(dst, h.created, 10)
	dst = append(dst, `,"model":`...)
	return appendJSONString(dst, h.model)
}

// appendErrorBody appends vLLM's ErrorResponse: {"error":{"message","type","param","code"}}.
func appendErrorBody(dst []byte, e *apiError) []byte {
	dst = append(dst, `{"error":{"message":`...)
	dst = appendJSONString(dst, e.message)
	dst = append(dst, `,"type":`...)
	dst = appendJSONString(dst, e.typ)
	dst = append(dst, `,"param":`...)
	dst = appendNullableString(dst, e.param)
	dst = append(dst, `,"code":`...)
	dst = strconv.AppendInt(dst, int64(e.status), 10)
	return append(dst, "}}"...)
}
