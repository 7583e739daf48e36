package upstream

import (
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
)

// ErrUnreachable means vLLM could not be reached (connection refused, DNS, reset before a response).
// The caller should answer 502 and may retry later.
var ErrUnreachable = errors.New("upstream unreachable")

// StatusError is a non-2xx answer from vLLM. Body holds vLLM's error JSON (possibly truncated).
type StatusError struct {
	Status int
	Body   []byte
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("upstream status %d: %s", e.Status, e.Message())
}

// Message returns vLLM's error message when the body has one, else the raw body.
func (e *StatusError) Message() string {
	for _, path := range []string{"error.message", "message", "detail"} {
		if m := gjson.GetBytes(e.Body, path); m.Type == gjson.String {
			return m.String()
		}
	}
	return string(e.Body)
}
