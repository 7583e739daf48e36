package stream

import (
	"errors"
	"strconv"
	"strings"
)

// ErrTruncated reports that the upstream stream ended without `data: [DONE]`:
// the generation did not finish cleanly. Callers should fail the response
// (response.failed) rather than report success.
var ErrTruncated = errors.New("stream: upstream ended before data: [DONE]")

// ErrEventTooLarge reports an SSE line or event larger than Decoder.MaxEventSize.
// The stream cannot be resynchronized; fail the response.
var ErrEventTooLarge = errors.New("stream: server-sent event too large")

// ErrBadChunk reports event data that is not a JSON object. The upstream is not
// speaking the vLLM completions protocol; fail the response.
var ErrBadChunk = errors.New("stream: malformed completion chunk")

// UpstreamError is an error that vLLM reported inside the stream, after the HTTP
// status was already sent: `data: {"error":{…}}` or the older
// `data: {"object":"error",…}`. Callers map it to response.failed.
type UpstreamError struct {
	Message string // human readable message, as sent
	Type    string // e.g. "BadRequestError", "InternalServerError"; may be empty
	Param   string // offending parameter, may be empty
	Code    int    // HTTP-like status vLLM attached (e.g. 400, 500); 0 if absent
}

// Error implements error.
func (e *UpstreamError) Error() string {
	var b strings.Builder
	b.WriteString("upstream error")
	if e.Code != 0 {
		b.WriteString(" ")
		b.WriteString(strconv.Itoa(e.Code))
	}
	if e.Type != "" {
		b.WriteString(" (")
		b.WriteString(e.Type)
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}
