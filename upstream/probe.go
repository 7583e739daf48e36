package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/internal/jsonlimit"
)

// ErrNoTokenIDs means the upstream answered a generation with text but without token ids: it
// ignores return_token_ids (vLLM before 0.10.2, a proxy that drops unknown parameters, a simulator
// that does not implement it). stitch cannot serve such an upstream: it decodes ids, not text.
var ErrNoTokenIDs = errors.New("upstream ignores return_token_ids (text without token ids)")

// Probe runs the smallest generation there is (one prompt token, one output token) and checks
// that the answer carries token ids. It returns nil when it does, ErrNoTokenIDs when it does not,
// and the request's error otherwise. Readiness uses it to tell a stuck upstream from a healthy
// one; startup uses it to refuse an upstream that ignores return_token_ids.
func (c *Client) Probe(ctx context.Context, model string) error {
	req := CompletionRequest{Model: model, Prompt: []uint32{0}, MaxTokens: 1, ReturnTokenIDs: true}
	resp, err := c.do(ctx, http.MethodPost, "/v1/completions", req.AppendJSON(nil))
	if err != nil {
		return fmt.Errorf("probe generation: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("probe generation: read: %w", err)
	}
	c.watch.SawByte()
	if err := jsonlimit.CheckDepth(data, jsonlimit.DefaultMaxDepth); err != nil || !gjson.ValidBytes(data) {
		return fmt.Errorf("probe generation: answer is not JSON: %.80q", data)
	}
	choice := gjson.GetBytes(data, "choices.0")
	if !choice.Get("token_ids").IsArray() && choice.Get("text").Exists() {
		return ErrNoTokenIDs
	}
	return nil
}
