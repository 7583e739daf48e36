package server

import (
	"context"
	"log/slog"
	"slices"

	"github.com/stitchllm/stitch/middleware"
)

// PromptPreview is the prompt POST /v1/responses sends upstream for a request: its text and ids,
// a forced tool call's opening (tool_choice required or named) included.
type PromptPreview struct {
	Text string
	IDs  []uint32
}

// Preview prepares body, a Responses create request, exactly as POST /v1/responses would (the
// same validation, items → messages, chat template, truncation and tool_choice), and returns the
// prompt without sending it. It is `stitch render --responses` for every family. References to
// stored state (previous_response_id, conversation, item_reference) resolve against the server's
// stores for ctx's tenant; errors are the *APIError the route would answer.
func (s *Server) Preview(ctx context.Context, body []byte) (PromptPreview, error) {
	t := &turn{tenant: middleware.Tenant(ctx), log: slog.New(slog.DiscardHandler), start: s.opts.Now()}
	if err := s.plan(ctx, t, body); err != nil {
		return PromptPreview{}, err
	}
	p := PromptPreview{Text: t.prompt.Text + forcedToolCallText(t.model, t.req), IDs: slices.Concat(t.prompt.IDs, t.forced)}
	return p, nil
}
