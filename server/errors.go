package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/upstream"
)

// APIError is an error answered in OpenAI's shape: {"error":{"message","type","param","code"}}.
type APIError struct {
	Status  int
	Type    string // invalid_request_error, server_error, …
	Code    string // optional machine code, e.g. previous_response_not_found
	Param   string // optional offending parameter, e.g. input[3].content
	Message string
	Err     error // cause, for logs; never shown to clients
}

func (e *APIError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %s: %v", e.Status, e.Type, e.Message, e.Err)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message)
}

func (e *APIError) Unwrap() error { return e.Err }

// badRequest returns a 400 invalid_request_error naming param.
func badRequest(param, format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Message: fmt.Sprintf(format, args...)}
}

// notFound is the 404 for GET/DELETE of an unknown (or another tenant's) response.
func notFound(id string) *APIError {
	return &APIError{Status: http.StatusNotFound, Type: "invalid_request_error",
		Message: fmt.Sprintf("No response found with id '%s'.", id)}
}

// previousNotFound is the 400 for a continuation of an unknown (or another tenant's) response.
func previousNotFound(id string) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "previous_response_id",
		Code: "previous_response_not_found", Message: fmt.Sprintf("Previous response with id '%s' not found.", id)}
}

// statusClientClosed is nginx's 499: the client went away; logged, never sent.
const statusClientClosed = 499

// classify maps any error to the APIError the client sees (Caddy-style: one place decides).
//   - an *APIError passes through;
//   - client gone → 499; deadline → 504;
//   - vLLM unreachable or 5xx → 502; vLLM 4xx → 400 with vLLM's message;
//   - store unavailable (store.ErrUnavailable, or errStoreUnavailable where a missing record
//     means the store is inconsistent) → 503 (Retry-After is set by the writer); a caller that
//     answers "not found" itself checks store.ErrNotFound before;
//   - anything else → 500.
func classify(err error) *APIError {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	var se *upstream.StatusError
	switch {
	case errors.Is(err, context.Canceled):
		return &APIError{Status: statusClientClosed, Type: "server_error", Message: "client closed request", Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &APIError{Status: http.StatusGatewayTimeout, Type: "server_error", Message: "upstream timed out", Err: err}
	case errors.Is(err, upstream.ErrTimeout):
		return &APIError{Status: http.StatusGatewayTimeout, Type: "server_error", Code: "upstream_timeout", Message: "The model server did not answer in time.", Err: err}
	case errors.Is(err, upstream.ErrNoTokenIDs):
		return &APIError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error", Message: "The model server returned text without token ids (it ignores return_token_ids); this server cannot use it.", Err: err}
	case errors.Is(err, render.ErrTemplate):
		// vLLM answers a template failure (fuel exhausted, raise_exception) 400; so does stitch.
		return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "input", Message: "The chat template could not render this conversation: " + templateMessage(err), Err: err}
	case errors.Is(err, errPersistBusy):
		return &APIError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "store_unavailable", Message: "the response store is overloaded; retry shortly", Err: err}
	case errors.Is(err, upstream.ErrUnreachable):
		return &APIError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_unreachable", Message: "the model server is unreachable", Err: err}
	case errors.As(err, &se) && se.Status >= 500:
		return &APIError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error", Message: "the model server failed: " + se.Message(), Err: err}
	case errors.As(err, &se) && se.Status == http.StatusNotFound:
		return &APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found", Message: se.Message(), Err: err}
	case errors.As(err, &se):
		return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: se.Message(), Err: err}
	case errors.Is(err, errUpstreamStream):
		return &APIError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error", Message: "The model server failed while generating the response.", Err: err}
	case errors.Is(err, errStoreUnavailable), errors.Is(err, store.ErrUnavailable):
		return &APIError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "store_unavailable", Message: "the response store is unavailable; retry shortly", Err: err}
	}
	return &APIError{Status: http.StatusInternalServerError, Type: "server_error", Message: "internal error", Err: err}
}

// errUpstreamStream marks a generation the model server broke off or failed after it began.
var errUpstreamStream = errors.New("upstream stream failed")

// errStoreUnavailable marks a store failure that a retry may cure (Redis down) where the store's
// own error does not say so (a conversation item missing from its checkpoint's store).
var errStoreUnavailable = errors.New("store unavailable")

// writeError answers err in OpenAI's shape. It must only be called before any body byte was written.
func writeError(w http.ResponseWriter, err error) *APIError {
	ae := classify(err)
	if ae.Status == statusClientClosed {
		return ae
	}
	if ae.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	middleware.WriteError(w, ae.Status, ae.Type, ae.Param, ae.Code, ae.Message)
	return ae
}
