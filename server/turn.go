package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/stream"
	"github.com/stitchllm/stitch/upstream"
)

// turn is one POST /v1/responses in flight: its input (req, model, tenant), its plan (prompt) and,
// once streamed, its output (conv). Kept apart so no single struct carries everything.
type turn struct {
	req    *request
	model  *ModelRuntime
	tenant string
	log    *slog.Logger
	start  time.Time

	prevItems []json.RawMessage // the conversation before this request's input
	prevIDs   []string
	// storedIDs name prevItems as read from the checkpoint store, whose items are immutable per
	// id (store.Checkpoints): the parsed-item cache trusts them (prepare.Input.StoredIDs). Nil
	// for a conversation's items, which the Conversations API can delete and add again.
	storedIDs []string
	prevCP    *store.Checkpoint // the previous response's checkpoint, when there is one
	// parentID is the response whose artifact the prompt may extend: previous_response_id, or
	// the conversation's last response when its items are still that response's conversation.
	parentID  string
	conv      *store.Conversation // the conversation the turn continues (conversations.go)
	prompt    *prepare.Prompt
	maxTokens int
	// forced are ids appended after the prompt to force a tool call (tool_choice required or a
	// named function); the parser sees them as the start of the output.
	forced []uint32
	// reseededFrom is the response a replayed history was matched to through encrypted_content.
	reseededFrom string
	kwargs       json.RawMessage
	// calls is the conversation's function calls after this request's input (history.go),
	// checked; next is the conversation the response ends, once stored, which the prompt's
	// commit keeps with its hot entry for the next turn (prepare.History).
	calls *toolCalls
	next  *prepare.History
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := &turn{tenant: middleware.Tenant(ctx), log: middleware.Logger(ctx, s.log), start: s.opts.Now()}
	body, err := s.readBody(w, r) // bounded size, time, bytes in flight and nesting (limits.go)
	if err != nil {
		ae := writeError(w, err)
		t.log.LogAttrs(ctx, levelFor(ae), "response rejected", slog.Int("status", ae.Status), slog.Any("err", err))
		return
	}
	// Admission after the body: a client trickling its body must not hold a generation slot (the
	// body's own time and in-flight bounds cover it), and a refusal still comes before any work.
	release, ok := s.guards.tryAdmit(w)
	if !ok {
		return
	}
	if err := s.plan(ctx, t, body); err != nil {
		release()
		ae := writeError(w, err)
		t.log.LogAttrs(ctx, levelFor(ae), "response rejected", slog.Int("status", ae.Status), slog.String("param", ae.Param), slog.Any("err", err))
		return
	}
	if t.req.Background {
		s.startBackground(ctx, w, t, release) // the generation keeps the slot (background.go)
		return
	}
	defer release()
	s.execute(ctx, w, t)
}

func levelFor(ae *APIError) slog.Level {
	if ae.Status >= 500 {
		return slog.LevelError
	}
	return slog.LevelInfo
}

// plan validates the request, resolves the previous response and prepares the prompt ids.
func (s *Server) plan(ctx context.Context, t *turn, body []byte) error {
	req, err := parseRequest(body, limits{MaxInputItems: s.opts.MaxInputItems}, s.opts.NewID)
	if err != nil {
		return err
	}
	t.req = req
	model, ok := s.opts.Models[req.Model]
	if !ok {
		return &APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("The model '%s' does not exist or you do not have access to it.", req.Model)}
	}
	t.model = model
	if err := s.checkInputBudget(t); err != nil { // before any tokenization (limits.go)
		return err
	}
	if req.PreviousResponseID != "" {
		cp, err := s.opts.Checkpoints.GetResponse(ctx, t.tenant, req.PreviousResponseID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return previousNotFound(req.PreviousResponseID)
		case err != nil: // store.ErrUnavailable: 503 (classify)
			return fmt.Errorf("resolve previous response: %w", err)
		}
		if cp.Model != "" && cp.Model != req.Model {
			t.log.Info("continuation switches model", "from", cp.Model, "to", req.Model)
		}
		t.prevCP, t.prevIDs, t.parentID = cp, cp.ConversationItemIDs, req.PreviousResponseID
		if h := heldHistory(model, t.tenant, cp); h != nil {
			// The hot entry holds the conversation as the previous turn stored it: the items are
			// not read back and copied, nor their tool calls scanned again.
			t.prevItems, t.storedIDs, t.calls = h.Items, t.prevIDs, h.Derived.(*toolCalls).clone()
		} else if err := s.loadPrevious(ctx, t, cp); err != nil {
			return err
		}
	}
	if err := s.resolveReferences(ctx, t); err != nil {
		return err
	}
	if req.Conversation != "" {
		if err := s.loadConversation(ctx, t); err != nil { // conversations.go
			return err
		}
		t.calls = nil // the conversation's items, not a held history's
	}
	if t.calls == nil {
		t.calls = newToolCalls()
		t.calls.scan(t.prevItems, false)
	}
	if err := t.calls.check(req.Input); err != nil { // tool-call pairing, as OpenAI (history.go)
		return err
	}
	t.kwargs = templateKwargs(model.ChatTemplateKwargs, model.Family.ReasoningSwitch(), req)
	if err := s.prepare(ctx, t); err != nil {
		return err
	}
	t.forced = forcedToolCall(t.model, req)
	if len(t.forced) >= t.maxTokens {
		return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "max_output_tokens",
			Code: "context_length_exceeded", Message: "No room left for a forced tool call in the context window."}
	}
	t.maxTokens -= len(t.forced)
	return nil
}

// heldHistory returns the conversation of cp as the turn that produced it kept it with its hot
// entry (prepare.HistoryKeeper), when it names exactly cp's items: the store keeps an item's
// bytes under its id and lists a derived id for other bytes (store.Checkpoints), so equal ids are
// the bytes the store holds. Nil otherwise: the items are read from the store.
func heldHistory(m *ModelRuntime, tenant string, cp *store.Checkpoint) *prepare.History {
	k, ok := m.Engine.(prepare.HistoryKeeper)
	if !ok {
		return nil
	}
	h := k.History(tenant, cp.ID)
	if h == nil || len(h.Items) != len(h.IDs) || !slices.Equal(h.IDs, cp.ConversationItemIDs) {
		return nil
	}
	if _, ok := h.Derived.(*toolCalls); !ok {
		return nil
	}
	return h
}

// loadPrevious reads the conversation of the previous response cp from the checkpoint store.
func (s *Server) loadPrevious(ctx context.Context, t *turn, cp *store.Checkpoint) error {
	items, err := s.opts.Checkpoints.GetItems(ctx, t.tenant, cp.ConversationItemIDs)
	if err != nil {
		if errors.Is(err, store.ErrCorrupt) { // unreadable for good: as a missing response, never a 5xx
			t.log.Warn("previous response has a corrupt stored item", "response_id", cp.ID, "err", err)
			return previousNotFound(t.req.PreviousResponseID)
		}
		if errors.Is(err, store.ErrNotFound) { // the checkpoint names it: the store is behind
			return fmt.Errorf("load conversation of %s: %w: %w", cp.ID, errStoreUnavailable, err)
		}
		return fmt.Errorf("load conversation of %s: %w", cp.ID, err)
	}
	t.prevItems = make([]json.RawMessage, len(items))
	for i, it := range items {
		t.prevItems[i] = it.Data
	}
	if len(items) == len(t.prevIDs) {
		t.storedIDs = t.prevIDs
	}
	return nil
}

// resolveReferences replaces item_reference inputs with the tenant's stored items of those ids
// (Codex-style clients reference items stitch returned earlier instead of resending them).
func (s *Server) resolveReferences(ctx context.Context, t *turn) error {
	for _, i := range t.req.References {
		id := itemID(t.req.Input[i])
		items, err := s.opts.Checkpoints.GetItems(ctx, t.tenant, []string{id})
		switch {
		case errors.Is(err, store.ErrNotFound):
			return badRequest(fmt.Sprintf("input[%d].id", i), "Item with id '%s' not found.", id)
		case err != nil: // store.ErrUnavailable: 503 (classify)
			return fmt.Errorf("resolve item reference %s: %w", id, err)
		}
		t.req.Input[i] = items[0].Data
		if len(t.req.InputIDs) == len(t.req.Input) {
			t.req.InputIDs[i] = itemID(items[0].Data) // stored under id, and so holding it; read, not assumed
		}
	}
	return nil
}

// forcedToolCall returns the ids that open a tool call when tool_choice requires one (any
// function, or a named one), in the format the model's family was trained on.
func forcedToolCall(m *ModelRuntime, req *request) []uint32 {
	text := forcedToolCallText(m, req)
	if text == "" {
		return nil
	}
	return m.EncodeTail(text) // it continues the prompt, after the generation prompt's added tokens
}

// forcedToolCallText is the text forcedToolCall encodes ("" when tool_choice forces nothing).
func forcedToolCallText(m *ModelRuntime, req *request) string {
	switch req.ToolChoice.Mode {
	case "required":
		return m.Family.ForcedToolCall("")
	case "function":
		return m.Family.ForcedToolCall(req.ToolChoice.Name)
	}
	return ""
}

// prepare renders the conversation to prompt ids, applying truncation and the output budget.
func (s *Server) prepare(ctx context.Context, t *turn) error {
	items := make([]json.RawMessage, 0, len(t.prevItems)+len(t.req.Input))
	items = append(items, t.prevItems...)
	items = append(items, t.req.Input...)
	nPrev := len(t.prevItems)
	instructions := ""
	if t.req.Instructions != nil {
		instructions = *t.req.Instructions
	}
	prevID, prevCP := t.parentID, t.prevCP
	if prevID == "" && s.opts.Reseed != nil {
		// A stateless client replaying its history: its reasoning items may name the response
		// whose artifact covers that history.
		prevID = s.opts.Reseed.replayedResponse(t.tenant, t.req.Input)
		t.reseededFrom = prevID
	}
	tools := offeredTools(t.req) // tool_choice none or allowed_tools restrict them (toolpolicy.go)
	storedIDs := t.storedIDs
	for {
		in := &prepare.Input{
			Tenant: t.tenant, PreviousID: prevID, Previous: prevCP, Instructions: instructions,
			EmptyInstructions: t.req.Instructions != nil && *t.req.Instructions == "", ReasoningEffort: t.req.ReasoningEffort,
			Items: items, StoredIDs: storedIDs, Tools: tools, Kwargs: t.kwargs,
			ItemParam: func(i int) string {
				if i < nPrev {
					return fmt.Sprintf("previous_response_id (stored item %d)", i)
				}
				return fmt.Sprintf("input[%d]", i-nPrev)
			},
		}
		start := time.Now()
		p, err := t.model.Engine.Prepare(ctx, in)
		if err != nil {
			var ie *render.InputError
			if errors.As(err, &ie) {
				return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: ie.Param, Message: ie.Error(), Err: err}
			}
			return fmt.Errorf("prepare prompt: %w", err)
		}
		left := t.model.MaxModelLen - len(p.IDs)
		if left >= 1 {
			// Counted once per turn, for the prompt actually sent (not for truncation attempts).
			path := "full"
			if p.Reused > 0 {
				path = "fast"
			}
			s.metrics.prepare.WithLabelValues(path).Observe(time.Since(start).Seconds())
			s.metrics.resolutions.WithLabelValues(string(p.Outcome)).Inc()
			s.metrics.promptTokens.WithLabelValues("reused").Add(float64(p.Reused))
			s.metrics.promptTokens.WithLabelValues("rendered").Add(float64(len(p.IDs) - p.Reused))
			t.prompt = p
			t.maxTokens = left
			if t.req.MaxOutputTokens > 0 && t.req.MaxOutputTokens < left {
				t.maxTokens = t.req.MaxOutputTokens
			}
			if len(p.SkippedTools) > 0 {
				t.log.Info("tools not rendered (hosted tool types are not executed by this server)", "tools", p.SkippedTools)
			}
			return nil
		}
		if t.req.Truncation != "auto" {
			return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "input", Code: "context_length_exceeded",
				Message: fmt.Sprintf("Your input exceeds the context window of this model: %d prompt tokens, %d allowed (prompt and output). Shorten the input or set truncation to 'auto'.", len(p.IDs), t.model.MaxModelLen)}
		}
		next := dropOldestTurn(items)
		if len(next) == len(items) || len(next) == 0 {
			return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "input", Code: "context_length_exceeded",
				Message: "Your input exceeds the context window of this model even after truncation."}
		}
		dropped := len(items) - len(next)
		nPrev -= dropped
		items = next
		storedIDs = storedIDs[min(dropped, len(storedIDs)):]
		prevID, prevCP = "", nil // the prefix changed: no artifact applies
	}
}

// dropOldestTurn removes the leading items up to (not including) the second user message, so the
// conversation still starts at a user turn. Instructions are not items and are always kept.
func dropOldestTurn(items []json.RawMessage) []json.RawMessage {
	users := 0
	for i, it := range items {
		v := gjson.ParseBytes(it)
		if (v.Get("type").Str == "message" || !v.Get("type").Exists()) && v.Get("role").Str == "user" {
			users++
			if users == 2 {
				return items[i:]
			}
		}
	}
	if len(items) > 1 {
		return items[1:]
	}
	return items
}

// templateKwargs merges the profile's chat_template_kwargs with the request: reasoning.effort "none"
// (or minimal) turns the family's reasoning switch (Qwen3's enable_thinking) off; json output
// formats too (the grammar starts at the first generated token, so there must be no reasoning
// block). A family without a switch ("") keeps the profile's kwargs.
func templateKwargs(defaults json.RawMessage, reasoningSwitch string, req *request) json.RawMessage {
	kw := []byte(defaults)
	if len(kw) == 0 {
		kw = []byte("{}")
	}
	thinking := ""
	switch req.ReasoningEffort {
	case "none", "minimal":
		thinking = "false"
	case "low", "medium", "high", "xhigh":
		thinking = "true"
	}
	if req.TextFormat.Type != "text" || req.ToolChoice.Mode == "required" || req.ToolChoice.Mode == "function" {
		thinking = "false" // a grammar or a forced tool call starts at the first generated token
	}
	if thinking == "" || reasoningSwitch == "" {
		return kw
	}
	out, err := setRaw(kw, reasoningSwitch, thinking)
	if err != nil {
		return kw
	}
	return out
}

// reasoningOff reports whether the turn's kwargs switch the family's reasoning off: a falsy value
// under key, as Python's bool() reads it (vLLM's reasoning parsers read the kwarg so).
func reasoningOff(kwargs json.RawMessage, key string) bool {
	if key == "" {
		return false
	}
	v := gjson.GetBytes(kwargs, key)
	if !v.Exists() {
		return false
	}
	switch v.Type {
	case gjson.False, gjson.Null:
		return true
	case gjson.Number:
		return v.Float() == 0
	case gjson.String:
		return v.Str == ""
	}
	return v.IsArray() && len(v.Array()) == 0 || v.IsObject() && v.Raw == "{}"
}

// chunkUpstream is the optional capability of an Upstream that takes the request itself rather
// than its JSON encoding and yields the chunks stream would parse from vLLM's SSE (vllmgrpc: the
// ids go out as protobuf and the engine's messages come back as chunks; no JSON is built and no
// SSE text written or parsed: issue 34).
type chunkUpstream interface {
	CompletionChunks(ctx context.Context, req *upstream.CompletionRequest) (upstream.ChunkStream, error)
}

// upstreamStream is a generation as the upstream gives it: vLLM's SSE bytes (read through
// stream.ChunkReader) or, from a chunkUpstream, the chunks themselves. Close ends it.
type upstreamStream struct {
	body   io.ReadCloser
	chunks upstream.ChunkStream
	cancel context.CancelFunc // the request's context; nil: none of its own
	// request is the request's JSON as sent to an SSE upstream (CompletionRequest.Parts) and
	// promptIDs its prompt's length: the first chunk's prompt echo is checked against them
	// (output.go).
	request   [][]byte
	promptIDs int
}

func (u upstreamStream) Close() error {
	var err error
	if u.chunks != nil {
		err = u.chunks.Close()
	} else if u.body != nil {
		err = u.body.Close()
	}
	if u.cancel != nil {
		u.cancel()
	}
	return err
}

// openUpstream sends the prompt to the model server and returns its stream; closing it ends the
// upstream request.
func (s *Server) openUpstream(ctx context.Context, t *turn) (upstreamStream, error) {
	req := t.req
	prompt := t.prompt.IDs
	if len(t.forced) > 0 {
		prompt = append(prompt[:len(prompt):len(prompt)], t.forced...)
	}
	creq := upstream.CompletionRequest{
		Model: req.Model, Prompt: prompt, MaxTokens: t.maxTokens,
		Temperature: req.Temperature, TopP: req.TopP,
		Stream: true, IncludeUsage: true, ReturnTokenIDs: true,
		StopTokenIDs: t.model.Family.StopTokenIDs(),
	}
	creq.PromptPrefix, creq.PromptPrefixIDs = t.prompt.PromptPrefix, t.prompt.PromptPrefixIDs
	if req.Logprobs >= 0 {
		n := req.Logprobs
		creq.Logprobs = &n // logprobs.go
	}
	if t.model.CacheSalt != nil {
		creq.CacheSalt = t.model.CacheSalt(t.tenant)
	}
	if req.TextFormat.Type == "json_schema" {
		creq.StructuredOutputs = fmt.Appendf(nil, `{"json":%s}`, req.TextFormat.Schema)
	} else if req.TextFormat.Type == "json_object" {
		creq.StructuredOutputs = json.RawMessage(`{"json_object":true}`)
	}
	upCtx, cancelUp := context.WithCancel(ctx)
	up := upstreamStream{cancel: cancelUp}
	var err error
	if cu, ok := s.opts.Upstream.(chunkUpstream); ok {
		up.chunks, err = cu.CompletionChunks(upCtx, &creq)
	} else {
		up.request, up.promptIDs = creq.Parts(), len(creq.Prompt)
		up.body, err = s.opts.Upstream.Completions(upCtx, up.request)
	}
	if err != nil {
		cancelUp()
		return upstreamStream{}, err
	}
	return up, nil
}

// execute sends the prompt upstream and streams (or collects) the response, then persists it.
func (s *Server) execute(ctx context.Context, w http.ResponseWriter, t *turn) {
	req := t.req
	rc, err := s.openUpstream(ctx, t)
	if err != nil {
		ae := writeError(w, err)
		s.metrics.responses.WithLabelValues("failed").Inc()
		t.log.LogAttrs(ctx, levelFor(ae), "upstream refused", slog.Int("status", ae.Status), slog.Any("err", err))
		return
	}
	defer rc.Close()

	out := s.newOutput(t)
	var sink eventSink
	if req.Stream {
		sink = newSSESink(w)
	} else {
		sink = discardSink{}
	}
	if err := sink.write(out.begin()); err != nil {
		t.log.Info("client gone before the first event", "err", err)
		return
	}
	final, runErr := s.generate(ctx, out, rc, sink)

	// Persist before the terminal event: a client that saw response.completed can continue from it.
	if ctx.Err() != nil {
		s.metrics.responses.WithLabelValues("cancelled").Inc()
		t.log.Info("response cancelled by client", "response_id", out.responseID(), "prompt_tokens", len(t.prompt.IDs))
		return
	}
	// The checkpoint and artifact writes outlive a client that disconnects now: the response is
	// complete and the client may still continue from it.
	final = s.settle(context.WithoutCancel(ctx), t, out, runErr, final)
	if req.Stream {
		if err := sink.write(final); err != nil {
			t.log.Info("client gone before the terminal event", "err", err)
		}
	} else {
		if runErr != nil {
			// Nothing was sent yet: a generation the model server broke off is an error, not a
			// 200 carrying a failed response that clients would take for success.
			writeError(w, runErr)
		} else {
			writeJSON(w, json.RawMessage(out.responseJSON()))
		}
	}
	s.logSummary(ctx, t, out, runErr)
}

// generate reads the model's stream into out, handing events to sink, and returns the held
// terminal event and the stream's error.
func (s *Server) generate(ctx context.Context, out *output, rc upstreamStream, sink eventSink) ([]stream.Event, error) {
	runErr := out.consume(ctx, rc, sink)
	return s.finished(out, runErr), runErr
}

// finished returns the terminal event of a generation that ended (not by ctx) and counts it.
func (s *Server) finished(out *output, runErr error) []stream.Event {
	final := out.finish(runErr)
	if d := out.ttft(); d > 0 {
		s.metrics.ttft.Observe(d.Seconds())
	}
	s.metrics.cachedTokens.Add(float64(out.cachedTokens()))
	return final
}

// settle runs a finished generation's after-steps: the checkpoint (a response that could not be
// stored is failed instead), the artifact's advance and the conversation's new items. It returns
// the terminal event to send.
func (s *Server) settle(wctx context.Context, t *turn, out *output, runErr error, final []stream.Event) []stream.Event {
	req := t.req
	stored := false
	if errors.Is(runErr, upstream.ErrNoTokenIDs) {
		s.noTokenIDs.Store(true) // out of rotation until a probe sees ids (ready.go)
	}
	if req.Store && !errors.Is(runErr, upstream.ErrNoTokenIDs) { // an upstream without ids: nothing to keep
		if err := s.persistDurably(wctx, t, out); err != nil { // own budget, verified (admission.go)
			// The response exists for the client but could not be stored: say so instead of
			// claiming completion, so nobody continues from an id that does not exist.
			t.log.Error("persist response", "response_id", out.responseID(), "err", err)
			final = out.failAfterPersist("store_error", "The response could not be stored; it cannot be continued or retrieved.")
		} else {
			stored = true
		}
	}
	// Stateless clients that carry encrypted_content can resume from the artifact too.
	continuable := stored || (!req.Store && req.IncludeEncrypted && s.opts.Reseed != nil)
	if continuable && !out.failed && advancesArtifact(out.conv.Response()) {
		// The prompt's after-response step (prepare.Prompt.Commit): advance the artifact.
		actx, cancel := context.WithTimeout(wctx, 2*time.Second)
		t.prompt.KeepHistory(t.next)
		t.prompt.Commit(actx, out.responseID(), out.conv)
		cancel()
	}
	s.appendConversation(wctx, t, out, stored) // conversations.go
	s.metrics.responses.WithLabelValues(out.status()).Inc()
	return final
}

// advancesArtifact reports whether a stored response's prompt and output may extend the
// conversation's artifact: a completed response, or one the token limit ended. A failed one never
// does, nor one whose tool call the model broke (incomplete_details.reason malformed_tool_call): its
// output ids hold text no output item carries.
func advancesArtifact(r *stream.Response) bool {
	switch r.Status {
	case stream.StatusCompleted:
		return true
	case stream.StatusIncomplete:
		return r.IncompleteDetails == nil || r.IncompleteDetails.Reason != stream.ReasonMalformedToolCall
	}
	return false
}

func (s *Server) logSummary(ctx context.Context, t *turn, out *output, runErr error) {
	attrs := []slog.Attr{
		slog.String("response_id", out.responseID()), slog.String("model", t.req.Model),
		slog.String("status", out.status()), slog.Bool("stream", t.req.Stream),
		slog.Int("prompt_tokens", len(t.prompt.IDs)), slog.Int("reused_tokens", t.prompt.Reused),
		slog.Int("output_tokens", out.outputTokens()), slog.Int("cached_tokens", out.cachedTokens()),
		slog.String("outcome", string(t.prompt.Outcome)), slog.String("reseeded_from", t.reseededFrom),
		slog.Float64("ttft_ms", out.ttft().Seconds()*1000),
		slog.Float64("duration_ms", float64(s.opts.Now().Sub(t.start).Microseconds())/1000),
	}
	level := slog.LevelInfo
	if out.lowered > 0 {
		// The model server's own cap (generation_config max_new_tokens) ended the answer.
		attrs = append(attrs, slog.Int("max_tokens_sent", out.sentMax), slog.Int("max_tokens_applied_upstream", out.lowered))
		level = slog.LevelWarn
	}
	if runErr != nil {
		attrs = append(attrs, slog.Any("err", runErr))
		level = slog.LevelWarn
	}
	t.log.LogAttrs(ctx, level, "response", attrs...)
}

// persist writes the checkpoint: this request's input items, the output items, and the conversation
// as item ids. Failed responses keep no output items (there is nothing to continue from).
func (s *Server) persist(ctx context.Context, t *turn, out *output) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	outItems := out.items()
	items := make([]store.Item, 0, len(t.req.Input)+len(outItems))
	inIDs := make([]string, 0, len(t.req.Input))
	for i, raw := range t.req.Input {
		id := t.req.inputID(i)
		inIDs = append(inIDs, id)
		items = append(items, store.Item{ID: id, Data: raw})
	}
	outIDs := make([]string, 0, len(outItems))
	for _, it := range outItems {
		outIDs = append(outIDs, it.ID)
		items = append(items, it)
	}
	conv := make([]string, 0, len(t.prevIDs)+len(inIDs)+len(outIDs))
	conv = append(append(append(conv, t.prevIDs...), inIDs...), outIDs...)
	instructions := ""
	if t.req.Instructions != nil {
		instructions = *t.req.Instructions
	}
	cp := &store.Checkpoint{
		ID: out.responseID(), Tenant: t.tenant, PreviousID: t.req.PreviousResponseID, Model: t.req.Model,
		Status: out.status(), CreatedAt: t.start, InputItemIDs: inIDs, OutputItemIDs: outIDs,
		ConversationItemIDs: conv, Instructions: instructions, Response: out.responseJSON(),
		PromptLen: len(t.prompt.IDs), GeneratedIDs: out.tokenIDs(),
	}
	t.prompt.Annotate(cp) // the fields the engine reads back (exact mode's suffix, fingerprint)
	// gpt-oss: the headers the output items were generated with (vLLM's message store).
	t.prompt.AnnotateOutput(cp, out.conv)
	// The conversation's earlier items, already loaded: a pod's local copy needs them when
	// earlier turns were served elsewhere (store.Fallback).
	var history []store.Item
	if len(t.prevItems) == len(t.prevIDs) {
		history = make([]store.Item, len(t.prevIDs))
		for i, id := range t.prevIDs {
			history[i] = store.Item{ID: id, Data: t.prevItems[i]}
		}
	}
	if t.conv != nil && t.prevCP == nil && history != nil {
		// A conversation's items live in the conversation store: the checkpoint store needs
		// them too, to continue or list this response on its own.
		items = append(history, items...)
	}
	if err := s.opts.Checkpoints.PutResponseHistory(ctx, cp, items, history); err != nil {
		return fmt.Errorf("put response %s: %w", cp.ID, err)
	}
	t.next = nextHistory(t, conv, outItems)
	return nil
}

// nextHistory is the conversation a stored response ends, for its hot entry (prepare.History):
// the earlier items as this turn had them, its input and output items, under the ids of conv, and
// the function calls after them. Nil when the earlier items are not the checkpoint's own (a
// conversation's) or were not all loaded.
func nextHistory(t *turn, conv []string, outItems []store.Item) *prepare.History {
	if t.conv != nil || t.calls == nil || len(t.prevItems) != len(t.prevIDs) {
		return nil
	}
	items := make([]json.RawMessage, 0, len(conv))
	items = append(append(items, t.prevItems...), t.req.Input...)
	outData := make([]json.RawMessage, len(outItems))
	for i, it := range outItems {
		outData[i] = it.Data
	}
	items = append(items, outData...)
	if len(items) != len(conv) {
		return nil
	}
	// t.calls is this turn's own (plan cloned a held state), and nothing reads it after this
	// (which runs once, after the checkpoint is stored): the next turn's state is built on it
	// instead of on a copy of its map. Dropped here, so that it is handed over once.
	calls := t.calls.kept()
	t.calls = nil
	calls.scan(outData, false)
	return &prepare.History{IDs: conv, Items: items, Derived: calls, DerivedBytes: calls.bytes()}
}

func setRaw(obj []byte, key, raw string) ([]byte, error) {
	return sjson.SetRawBytes(obj, key, []byte(raw))
}
