package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/internal/jsonlimit"
	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/render"
)

// Limits bound what one request may cost the process (issue 14). The zero value of each field
// takes the default its comment names.
type Limits struct {
	// MaxJSONDepth bounds the nesting of request bodies, checked by a linear scan before any
	// recursive parse. Default jsonlimit.DefaultMaxDepth.
	MaxJSONDepth int
	// MaxConcurrentResponses bounds generations in flight (POST /v1/responses and the
	// pass-through generation routes); beyond it requests get 429 with Retry-After before any
	// work. 0: unbounded.
	MaxConcurrentResponses int
	// PersistConcurrency bounds checkpoint writes in flight; a write waits for a slot up to
	// PersistQueueTimeout, and only then does its own 10 s budget start. Default 64.
	PersistConcurrency int
	// PersistQueueTimeout bounds the wait for a persist slot. Default 60 s.
	PersistQueueTimeout time.Duration
	// WriteTimeout bounds each write to a client (an SSE batch, a JSON body): a client that stops
	// reading is dropped instead of holding the generation. 0: default 60 s; negative: none.
	WriteTimeout time.Duration
	// MaxTokenBytes is, per served model, the longest token in bytes: a request whose text cannot
	// fit the context window even at that density is refused before it is tokenized. A model
	// missing from the map is not pre-checked.
	MaxTokenBytes map[string]int
	// UpstreamFirstByte and UpstreamIdle are the upstream client's first-byte and idle timeouts,
	// applied to pass-through requests too (the proxy does not go through the client's
	// Completions). 0: none.
	UpstreamFirstByte time.Duration
	UpstreamIdle      time.Duration
	// Body bounds request bodies process-wide (read time, bytes in flight).
	Body middleware.BodyOptions
}

// itemIDMaxBytes is the longest item id accepted (OpenAI's ids are ~50 bytes; stored keys embed them).
const itemIDMaxBytes = 256

// readBody reads the request body under MaxBodyBytes (and the process-wide body limits of
// middleware.BodyLimits) and bounds its nesting, answering every failure as the client's: 413,
// 408, 429 or 400 — never a 500.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := readAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes), r.ContentLength)
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return nil, &APIError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
				Message: fmt.Sprintf("Request body too large (limit %d bytes).", s.opts.MaxBodyBytes), Err: err}
		case errors.Is(err, middleware.ErrBodyTimeout):
			w.Header().Set("Connection", "close") // the rest of the body never came: do not reuse
			return nil, &APIError{Status: http.StatusRequestTimeout, Type: "invalid_request_error", Code: "request_timeout",
				Message: "The request body was not received in time.", Err: err}
		case errors.Is(err, middleware.ErrBodyBudget):
			// writeError sets Retry-After for 503 only; a full body budget drains within seconds.
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
			return nil, &APIError{Status: http.StatusTooManyRequests, Type: "server_error", Code: "server_busy",
				Message: "The server is receiving too many large requests; retry shortly.", Err: err}
		}
		return nil, &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: "The request body could not be read.", Err: fmt.Errorf("read body: %w", err)}
	}
	if err := jsonlimit.CheckDepth(body, s.opts.Limits.MaxJSONDepth); err != nil {
		return nil, &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: fmt.Sprintf("The request body nests arrays and objects more than %d levels deep.", depthOrDefault(s.opts.Limits.MaxJSONDepth)), Err: err}
	}
	return body, nil
}

// readBodyPrealloc bounds the buffer readAll makes for a body's declared length before its bytes
// arrive, so that a claimed length costs no more memory than this until it is sent.
const readBodyPrealloc = 256 << 10

// readAll is io.ReadAll into one buffer sized for a body of sizeHint bytes (the request's
// Content-Length, up to readBodyPrealloc; -1 when unknown), instead of one grown from 512 bytes
// through a dozen copies.
func readAll(r io.Reader, sizeHint int64) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(max(sizeHint, 0), readBodyPrealloc)+bytes.MinRead))
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

func depthOrDefault(d int) int {
	if d < 1 {
		return jsonlimit.DefaultMaxDepth
	}
	return d
}

// checkItemID refuses item ids stitch could not store or look up: over itemIDMaxBytes, or holding
// NUL or other control characters (store keys and logs must stay printable).
func checkItemID(id gjson.Result, param string) error {
	if !id.Exists() || id.Type == gjson.Null {
		return nil
	}
	if id.Type != gjson.String {
		return badRequest(param+".id", "Invalid type for '%s.id': expected a string.", param)
	}
	if len(id.Str) > itemIDMaxBytes {
		return badRequest(param+".id", "Invalid '%s.id': string too long (%d bytes; at most %d).", param, len(id.Str), itemIDMaxBytes)
	}
	if strings.IndexFunc(id.Str, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return badRequest(param+".id", "Invalid '%s.id': control characters are not allowed in ids.", param)
	}
	return nil
}

// checkInputBudget refuses, before any tokenization, a request whose new text cannot fit the
// model's context window: no tokenization of n bytes yields fewer than n/maxTokenBytes tokens.
// Only text that reaches the prompt is counted (message text, call arguments and outputs,
// reasoning text, instructions), so the bound never refuses a request that could fit.
func (s *Server) checkInputBudget(t *turn) error {
	perToken := s.opts.Limits.MaxTokenBytes[t.req.Model]
	if perToken <= 0 || t.model.MaxModelLen <= 0 || t.req.Truncation == "auto" {
		return nil
	}
	limit := int64(t.model.MaxModelLen) * int64(perToken)
	var n int64
	if t.req.Instructions != nil {
		n += int64(len(*t.req.Instructions))
	}
	tooLong := func(param string) error {
		return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Code: "context_length_exceeded",
			Message: fmt.Sprintf("Your input exceeds the context window of this model: more than %d bytes of text cannot fit %d tokens.", limit, t.model.MaxModelLen)}
	}
	// Tools first: a huge tools array costs a whole template render before its 400 otherwise.
	// (tool_choice none or allowed_tools keep tools from the template: not counted then.)
	if t.req.ToolChoice.Mode != "none" && t.req.ToolChoice.Allowed == nil {
		if n += toolTextBytes(t.req.Tools, t.model.ToolText); n > limit {
			return tooLong("tools")
		}
	}
	for _, raw := range t.req.Input {
		n += renderedTextBytes(raw)
		if n > limit {
			return tooLong("input")
		}
	}
	return nil
}

// toolTextBytes sums the bytes of the tools' strings that the template is known to write (tt:
// probed once per model), so the sum never exceeds what the prompt holds of them.
func toolTextBytes(tools json.RawMessage, tt render.ToolText) int64 {
	var n int64
	var params func(schema gjson.Result)
	params = func(schema gjson.Result) { // nesting is bounded by the body's depth check
		schema.Get("properties").ForEach(func(k, v gjson.Result) bool {
			if tt.PropertyNames {
				n += int64(len(k.Str))
			}
			if d := v.Get("description"); tt.PropertyDescriptions && d.Type == gjson.String {
				n += int64(len(d.Str))
			}
			if v.IsObject() {
				params(v)
			}
			return true
		})
	}
	eachFunctionTool(tools, func(f gjson.Result) bool {
		if tt.Name {
			n += int64(len(f.Get("name").Str))
		}
		if tt.Description {
			n += int64(len(f.Get("description").Str))
		}
		if p := f.Get("parameters"); p.IsObject() {
			params(p)
		}
		return true
	})
	return n
}

// templateMessage is the template's own words for a client (what follows render.ErrTemplate in
// the chain's text; the template's file name and stitch's wrapping are left out), cut short.
func templateMessage(err error) string {
	msg := err.Error()
	marker := render.ErrTemplate.Error() + ": "
	if i := strings.LastIndex(msg, marker); i >= 0 {
		msg = msg[i+len(marker):]
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}
