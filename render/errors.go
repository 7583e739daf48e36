package render

import (
	"errors"
	"fmt"
)

// Sentinel errors. Each says what the caller should do; match them with errors.Is.
var (
	// ErrInvalidInput marks a request the client got wrong (bad shape, unknown item type or role).
	// Answer HTTP 400 invalid_request_error; an *InputError in the chain carries the OpenAI param.
	ErrInvalidInput = errors.New("invalid input")

	// ErrUnsupported marks valid OpenAI input that stitch cannot render for a text model
	// (images, files, audio, built-in tool calls). Answer HTTP 400 with the param.
	ErrUnsupported = errors.New("not supported")

	// ErrTemplate marks a chat template that failed on this request (raise_exception, a type error,
	// fuel exhausted). vLLM answers 400 in this case; so should the server.
	ErrTemplate = errors.New("chat template failed")

	// ErrModelDir marks a model directory that cannot be served (missing or malformed
	// tokenizer.json / tokenizer_config.json, no chat template). Fix the deployment; do not retry.
	ErrModelDir = errors.New("invalid model directory")
)

// InputError is a client error tied to one place of the request. Param is the OpenAI `param`
// path, e.g. "input[3].content[0].type" or "tools[1].name". Err is ErrInvalidInput or
// ErrUnsupported.
type InputError struct {
	Param   string
	Message string
	Err     error
}

func (e *InputError) Error() string {
	if e.Param == "" {
		return fmt.Sprintf("%v: %s", e.Err, e.Message)
	}
	return fmt.Sprintf("%v: %s: %s", e.Err, e.Param, e.Message)
}

// Unwrap returns ErrInvalidInput or ErrUnsupported.
func (e *InputError) Unwrap() error { return e.Err }

func invalid(param, format string, args ...any) error {
	return &InputError{Param: param, Message: fmt.Sprintf(format, args...), Err: ErrInvalidInput}
}

func unsupported(param, format string, args ...any) error {
	return &InputError{Param: param, Message: fmt.Sprintf(format, args...), Err: ErrUnsupported}
}
