package vllmgrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/stitchllm/stitch/internal/jsonappend"
	"github.com/stitchllm/stitch/upstream"
)

// What the server needs of an upstream beyond Completions and Health (server.Upstream and its
// readiness capability): Stalled and Probe for readiness, HTTPClient for the pass-through routes.

// Stalled reports whether the latest generation event was a timeout (no message since), as
// upstream.Client.Stalled does: readiness then needs a Probe to succeed.
func (c *Client) Stalled() bool { return c.watch.Stalled() }

// Probe runs a one-token generation (prompt [0]) to its end, as the HTTP client's Probe does: an
// engine can hang while HealthCheck still answers. model is not sent (GenerateRequest names none).
func (c *Client) Probe(ctx context.Context, model string) error {
	st, err := c.Generate(ctx, &upstream.CompletionRequest{Model: model, Prompt: []uint32{0}, MaxTokens: 1})
	if err != nil {
		return fmt.Errorf("probe generation: %w", err)
	}
	defer st.Close()
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("probe generation: %w", err)
		}
		c.watch.SawByte()
		if ch.FinishReason == "abort" || ch.FinishReason == "error" {
			return fmt.Errorf("probe generation: finish_reason %s", ch.FinishReason)
		}
	}
}

// HTTPClient is the client the server's pass-through routes use. The engine API has no HTTP
// routes: GET /v1/models is answered from GetModelInfo (id, max_model_len), every other route
// (chat/completions, completions, embeddings, tokenize, detokenize) with a 404 in OpenAI's error
// shape that says why. Nothing leaves the process but the GetModelInfo call.
func (c *Client) HTTPClient() *http.Client { return &http.Client{Transport: passthroughTransport{c}} }

// passthroughTransport answers the server's pass-through requests locally (see HTTPClient).
type passthroughTransport struct{ c *Client }

func (t passthroughTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if req.Method == http.MethodGet && req.URL.Path == "/v1/models" {
		models, err := t.c.Models(req.Context())
		if err != nil {
			var se *upstream.StatusError
			if errors.As(err, &se) {
				return jsonResponse(req, se.Status, se.Body), nil
			}
			return nil, err // the proxy answers it as an unreachable upstream
		}
		return jsonResponse(req, http.StatusOK, modelsJSON(models)), nil
	}
	msg := fmt.Sprintf("%s %s is not available: this server's model backend is vLLM's gRPC engine API (%s), which serves "+
		"token-level generation only. Use POST /v1/responses, or run stitch with an HTTP --upstream for this route.",
		req.Method, req.URL.Path, t.c.BaseURL())
	body := []byte(`{"error":{"message":`)
	body = jsonappend.String(body, msg)
	body = append(body, `,"type":"invalid_request_error","param":null,"code":"unsupported_upstream_route"}}`...)
	return jsonResponse(req, http.StatusNotFound, body), nil
}

// modelsJSON is vLLM's /v1/models answer for the engine's model.
func modelsJSON(models []upstream.ModelInfo) []byte {
	b := []byte(`{"object":"list","data":[`)
	for i, m := range models {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsonappend.String(b, m.ID)
		b = append(b, `,"object":"model","owned_by":"vllm","root":`...)
		b = jsonappend.String(b, m.ID)
		b = append(b, `,"max_model_len":`...)
		b = strconv.AppendInt(b, int64(m.MaxModelLen), 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func jsonResponse(req *http.Request, status int, body []byte) *http.Response {
	return &http.Response{
		Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
