package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/stitchllm/stitch/middleware"
)

// apiRoutes registers the Responses API routes beyond create / retrieve / delete / input_items,
// and answers every other path under /v1/responses and /v1/conversations with OpenAI's 404, so
// that none of them reaches the pass-through (vLLM's own Responses and Conversations routes would
// bypass stitch's tenancy, and its 404 looks like a wrong base URL).
func (s *Server) apiRoutes(r chi.Router, metered func(route string, h http.HandlerFunc) http.Handler) {
	r.Method(http.MethodPost, "/v1/responses/input_tokens", metered("POST /v1/responses/input_tokens", s.handleInputTokens))
	unknown := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		middleware.WriteError(w, http.StatusNotFound, "invalid_request_error", "", "unknown_url", "Invalid URL ("+r.Method+" "+safePath(r)+")")
	})
	s.conversationRoutes(r, metered) // conversations.go
	r.Handle("/v1/responses/*", unknown)
	r.Handle("/v1/conversations/*", unknown)
}

// checkIncludeQuery validates include (include[] as the SDKs send it). The stored response is
// returned as it was created, so valid values change nothing.
func checkIncludeQuery(q url.Values) error {
	var values []gjson.Result
	for _, key := range []string{"include", "include[]"} {
		for _, v := range q[key] {
			values = append(values, gjson.Result{Type: gjson.String, Str: v})
		}
	}
	_, err := checkInclude(values, "include")
	return err
}

// handleInputTokens answers POST /v1/responses/input_tokens with the exact number of prompt tokens
// the request would send to the model: the turn is planned as a create would plan it (previous
// response, truncation, tools, tool_choice and chat_template_kwargs included) and its prompt ids
// counted, forced tool-call ids included, as usage.input_tokens counts them.
func (s *Server) handleInputTokens(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := &turn{tenant: middleware.Tenant(ctx), log: middleware.Logger(ctx, s.log), start: s.opts.Now()}
	body, err := s.readBody(w, r)
	if err == nil {
		body, err = s.inputTokensBody(body)
	}
	if err == nil {
		// Planning renders and tokenizes the whole conversation, a create's preparation: it
		// takes the same generation slots (429 with Retry-After when they are full).
		release, ok := s.guards.tryAdmit(w)
		if !ok {
			return
		}
		defer release()
		err = s.plan(ctx, t, body)
	}
	if err != nil {
		ae := writeError(w, err)
		t.log.LogAttrs(ctx, levelFor(ae), "input_tokens rejected", slog.Int("status", ae.Status), slog.String("param", ae.Param), slog.Any("err", err))
		return
	}
	n := len(t.prompt.IDs) + len(t.forced)
	out := []byte(`{"object":"response.input_tokens","input_tokens":`)
	out = strconv.AppendInt(out, int64(n), 10)
	writeJSON(w, json.RawMessage(append(out, '}')))
}

// inputTokensBody checks an input_tokens body against its own fields and fills model when the
// server serves exactly one (the parameter is optional there).
func (s *Server) inputTokensBody(body []byte) ([]byte, error) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return nil, badRequest("", "We could not parse the JSON body of your request; it must be a JSON object.")
	}
	root := gjson.ParseBytes(body)
	if err := checkFields(objectOf(root), inputTokensChecks); err != nil {
		return nil, err
	}
	if m := root.Get("model"); (!m.Exists() || m.Type == gjson.Null) && len(s.opts.Models) == 1 {
		for name := range s.opts.Models {
			out, err := sjson.SetBytes(body, "model", name)
			if err != nil {
				return nil, badRequest("model", "Missing required parameter: 'model'.")
			}
			return out, nil
		}
	}
	return body, nil
}
