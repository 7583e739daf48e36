package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
)

// sseEvent is one Server-Sent Event as received (W3C event-stream framing).
type sseEvent struct {
	Event string // the `event:` field; "" when the source had none (SDK-decoded events)
	Data  []byte // the `data:` lines joined by "\n"
}

// apiErrorBody is the OpenAI error envelope.
type apiErrorBody struct {
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// doRaw sends one request with a JSON body (nil for none) and returns status and body.
func (st *stack) doRaw(t *testing.T, ctx context.Context, method, path string, body []byte, header http.Header) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, st.baseURL+path, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// postStream POSTs body (which must hold "stream": true) to /v1/responses with the given
// Accept header and returns the decoded events. It fails the test unless the answer is a
// 200 text/event-stream.
func (st *stack) postStream(t *testing.T, ctx context.Context, body []byte, accept string) []sseEvent {
	t.Helper()
	status, hdr, b := st.doRaw(t, ctx, http.MethodPost, "/v1/responses", body, http.Header{"Accept": {accept}})
	if status != http.StatusOK {
		t.Fatalf("POST /v1/responses (stream, Accept %s) = %d, want 200; body: %s", accept, status, b)
	}
	if mt, _, _ := mime.ParseMediaType(hdr.Get("Content-Type")); mt != "text/event-stream" {
		t.Fatalf("stream Content-Type = %q, want text/event-stream", hdr.Get("Content-Type"))
	}
	events, err := parseSSE(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse SSE: %v\n%s", err, b)
	}
	return events
}

// parseSSE decodes an event stream: `field: value` lines, events dispatched on a blank line,
// `:` comments ignored, a trailing event without a blank line still dispatched.
func parseSSE(r io.Reader) ([]sseEvent, error) {
	var (
		events []sseEvent
		cur    sseEvent
		data   []string
		has    bool
	)
	flush := func() {
		if has {
			cur.Data = []byte(strings.Join(data, "\n"))
			events = append(events, cur)
		}
		cur, data, has = sseEvent{}, nil, false
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			flush()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			cur.Event, has = value, true
		case "data":
			data, has = append(data, value), true
		}
	}
	flush()
	return events, sc.Err()
}

// decodeAPIError parses an OpenAI error body, failing the test when it is not one.
func decodeAPIError(t *testing.T, b []byte) (typ, code, param, msg string) {
	t.Helper()
	var e apiErrorBody
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil {
		t.Fatalf("body is not an OpenAI error object (%v): %s", err, b)
	}
	if e.Error.Code != nil {
		code = *e.Error.Code
	}
	if e.Error.Param != nil {
		param = *e.Error.Param
	}
	return e.Error.Type, code, param, e.Error.Message
}

// mustJSON marshals v or fails the test.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return b
}
