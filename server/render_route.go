package server

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/stitchllm/stitch/middleware"
)

// renderResponse is POST /v1/responses/render's answer, in the shape of vLLM's render endpoints
// (vllm/entrypoints/serve/disagg: GenerateRequest, what /v1/chat/completions/render returns): the
// prompt ids a generation of the request would be given, and the parameters that go with them.
// cache_salt is the tenant's, the one stitch sends upstream: a router folds it into the first
// block's key, as the model server's KV events do.
type renderResponse struct {
	RequestID      string               `json:"request_id"`
	Model          string               `json:"model"`
	TokenIDs       []uint32             `json:"token_ids"`
	SamplingParams renderSamplingParams `json:"sampling_params"`
	CacheSalt      *string              `json:"cache_salt"`
	Stream         bool                 `json:"stream"`
}

type renderSamplingParams struct {
	MaxTokens   int             `json:"max_tokens"`
	Temperature json.RawMessage `json:"temperature,omitempty"`
	TopP        json.RawMessage `json:"top_p,omitempty"`
}

// handleRender is POST /v1/responses/render (vLLM #50195): a Responses create request in, the
// prompt ids out, nothing generated, nothing stored. previous_response_id and conversation
// resolve from the shared stores for the caller's tenant, so any replica answers for any
// response; another tenant's id is not found (404, as vLLM answers an unknown response). The ids
// are those POST /v1/responses would send upstream for the same body (the same plan: artifact
// lookup, items → messages, template, truncation, a forced tool call's opening), at the cost of a
// continuation's preparation: O(new turn) on an artifact hit. Nothing is advanced: artifacts and
// checkpoints are written only after a generation (turn.go, persist). A router's token producer
// calls it to score a Responses continuation against its KV-block index (docs/operator-guide.md,
// "Fleet").
func (s *Server) handleRender(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := &turn{tenant: middleware.Tenant(ctx), log: middleware.Logger(ctx, s.log), start: s.opts.Now()}
	body, err := s.readBody(w, r) // the create route's bounds (limits.go)
	if err != nil {
		writeError(w, err)
		return
	}
	release, ok := s.guards.tryAdmit(w) // preparation is the create route's work: same slots
	if !ok {
		return
	}
	defer release()
	if err := s.plan(ctx, t, body); err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusBadRequest && strings.HasSuffix(ae.Code, "_not_found") {
			nf := *ae
			nf.Status = http.StatusNotFound
			err = &nf
		}
		ae = writeError(w, err)
		t.log.LogAttrs(ctx, levelFor(ae), "render rejected", slog.Int("status", ae.Status), slog.String("param", ae.Param), slog.Any("err", err))
		return
	}
	out := renderResponse{
		RequestID: randomID("render"), Model: t.req.Model,
		TokenIDs:       slices.Concat(t.prompt.IDs, t.forced),
		SamplingParams: renderSamplingParams{MaxTokens: t.maxTokens, Temperature: t.req.Temperature, TopP: t.req.TopP},
	}
	if t.model.CacheSalt != nil {
		if salt := t.model.CacheSalt(t.tenant); salt != "" {
			out.CacheSalt = &salt
		}
	}
	writeJSON(w, out)
}
