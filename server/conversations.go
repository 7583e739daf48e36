package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/stream"
)

// The Conversations API (/v1/conversations) and the conversation parameter of create. A
// conversation is an ordered list of items with metadata (store.Conversations, shared over Redis
// like the checkpoints). A response created with conversation continues from the conversation's
// items and appends its input and output items to it. When the conversation's items are exactly
// the conversation of the response that last appended to it (nothing was added or deleted since),
// that response is the turn's artifact parent, as previous_response_id would make it; otherwise
// the turn is a full render. Both give the same prompt ids.

// The Conversations API's endpoints with request fields, and their answers (see fields.go; the
// user guide's compatibility table lists them too).
const (
	endpointConversationCreate      = "POST /v1/conversations"
	endpointConversationUpdate      = "POST /v1/conversations/{id}"
	endpointConversationItems       = "GET /v1/conversations/{id}/items"
	endpointConversationItemsCreate = "POST /v1/conversations/{id}/items"
	endpointConversationItem        = "GET /v1/conversations/{id}/items/{item_id}"
)

var (
	conversationCreateFields = map[string]fieldRule{"items": {answer: honoured}, "metadata": {answer: honoured}}
	conversationUpdateFields = map[string]fieldRule{"metadata": {answer: honoured}}
	conversationItemsFields  = map[string]fieldRule{"after": {answer: honoured}, "limit": {answer: honoured},
		"order": {answer: honoured}, "include": {answer: ignored}}
	conversationItemsCreateFields = map[string]fieldRule{"items": {answer: honoured}, "include": {answer: ignored}}
	conversationItemFields        = map[string]fieldRule{"include": {answer: ignored}}
)

// maxConversationItemsPerCall is how many items one create or items.create takes (OpenAI: 20).
const maxConversationItemsPerCall = 20

func parseConversation(root jsonObject, r *request) error {
	v := root.Get("conversation")
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	switch {
	case v.Type == gjson.String && v.Str != "":
		r.Conversation = v.Str
	case v.IsObject() && v.Get("id").Type == gjson.String && v.Get("id").Str != "":
		r.Conversation = v.Get("id").Str
	case v.IsObject():
		return badRequest("conversation.id", "Missing required parameter: 'conversation.id'.")
	default:
		return badRequest("conversation", "Invalid type for 'conversation': expected a conversation id or an object with 'id', but got %s instead.", typeName(v))
	}
	if r.PreviousResponseID != "" {
		return badRequest("conversation", "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.")
	}
	return nil
}

func conversationNotFound(id string) *APIError {
	return &APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "conversation",
		Message: fmt.Sprintf("Conversation with id '%s' not found.", id)}
}

// convErr maps a Conversations store error.
func convErr(op, id string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		ae := conversationNotFound(id)
		ae.Param, ae.Err = "", err
		return ae
	case errors.Is(err, store.ErrUnavailable):
		return fmt.Errorf("%s %s: %w: %w", op, id, errStoreUnavailable, err)
	}
	return fmt.Errorf("%s %s: %w", op, id, err)
}

// loadConversation resolves the turn's conversation: its items become the history, and the
// response that last appended them the artifact parent when they are still its conversation.
func (s *Server) loadConversation(ctx context.Context, t *turn) error {
	id := t.req.Conversation
	c, err := s.convs.Get(ctx, t.tenant, id)
	if errors.Is(err, store.ErrNotFound) {
		return conversationNotFound(id)
	}
	if err != nil {
		return convErr("load conversation", id, err)
	}
	items, err := s.convs.Items(ctx, t.tenant, id, c.ItemIDs)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) { // the record names it: the store is behind
			err = fmt.Errorf("%w: %w", errStoreUnavailable, err)
		}
		return convErr("load conversation items", id, err)
	}
	if max := s.convs.MaxItems(); max > 0 && len(c.ItemIDs)+len(t.req.Input) > max {
		return badRequest("conversation", "Conversation '%s' holds %d items; %d more input items exceed the limit of %d items per conversation.", id, len(c.ItemIDs), len(t.req.Input), max)
	}
	for i := range t.req.Input {
		if inID := t.req.inputID(i); slices.Contains(c.ItemIDs, inID) {
			return badRequest(fmt.Sprintf("input[%d].id", i), "Item with id '%s' is already in conversation '%s'.", inID, id)
		}
	}
	t.conv = c
	t.prevIDs = c.ItemIDs
	t.prevItems = make([]json.RawMessage, len(items))
	for i, it := range items {
		t.prevItems[i] = it.Data
	}
	if c.LastResponseID != "" {
		cp, err := s.opts.Checkpoints.GetResponse(ctx, t.tenant, c.LastResponseID)
		if err == nil && slices.Equal(cp.ConversationItemIDs, c.ItemIDs) {
			t.prevCP, t.parentID = cp, cp.ID
		}
	}
	return nil
}

// appendConversation adds a finished turn (its input, then its output items) to its
// conversation. A failed response adds nothing.
func (s *Server) appendConversation(ctx context.Context, t *turn, out *output, stored bool) {
	if t.conv == nil {
		return
	}
	if st := out.status(); st != stream.StatusCompleted && st != stream.StatusIncomplete {
		return
	}
	items := make([]store.Item, 0, len(t.req.Input)+4)
	for i, raw := range t.req.Input {
		items = append(items, store.Item{ID: t.req.inputID(i), Data: raw})
	}
	items = append(items, out.items()...)
	parent := ""
	if stored {
		parent = out.responseID()
	}
	if _, err := s.convs.Append(ctx, t.tenant, t.conv.ID, items, parent, t.conv.Version); err != nil {
		t.log.Error("append the turn to its conversation", "conversation", t.conv.ID, "response_id", out.responseID(), "err", err)
	}
}

func (s *Server) conversationRoutes(r chi.Router, metered func(route string, h http.HandlerFunc) http.Handler) {
	r.Method(http.MethodPost, "/v1/conversations", metered("POST /v1/conversations", s.handleConversationCreate))
	r.Method(http.MethodGet, "/v1/conversations/{id}", metered("GET /v1/conversations/{id}", s.handleConversationGet))
	r.Method(http.MethodPost, "/v1/conversations/{id}", metered("POST /v1/conversations/{id}", s.handleConversationUpdate))
	r.Method(http.MethodDelete, "/v1/conversations/{id}", metered("DELETE /v1/conversations/{id}", s.handleConversationDelete))
	r.Method(http.MethodGet, "/v1/conversations/{id}/items", metered("GET /v1/conversations/{id}/items", s.handleConversationItems))
	r.Method(http.MethodPost, "/v1/conversations/{id}/items", metered("POST /v1/conversations/{id}/items", s.handleConversationItemsCreate))
	r.Method(http.MethodGet, "/v1/conversations/{id}/items/{item}", metered("GET /v1/conversations/{id}/items/{item}", s.handleConversationItem))
	r.Method(http.MethodDelete, "/v1/conversations/{id}/items/{item}", metered("DELETE /v1/conversations/{id}/items/{item}", s.handleConversationItemDelete))
}

// conversationJSON is the conversation object.
func conversationJSON(c *store.Conversation) json.RawMessage {
	out := []byte(`{"id":`)
	out = appendJSONString(out, c.ID)
	out = append(out, `,"object":"conversation","created_at":`...)
	out = strconv.AppendInt(out, c.CreatedAt.Unix(), 10)
	out = append(out, `,"metadata":`...)
	if len(c.Metadata) == 0 {
		out = append(out, "{}"...)
	} else {
		out = append(out, c.Metadata...)
	}
	return append(out, '}')
}

// conversationBody reads a JSON object body with the given fields (others: 400).
func (s *Server) conversationBody(w http.ResponseWriter, r *http.Request, fields map[string]fieldRule) (gjson.Result, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return gjson.Result{}, err
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return gjson.Result{}, badRequest("", "We could not parse the JSON body of your request; it must be a JSON object.")
	}
	root := gjson.ParseBytes(body)
	var bad error
	root.ForEach(func(k, _ gjson.Result) bool {
		if _, ok := fields[k.Str]; !ok {
			bad = badRequest(k.Str, "Unrecognized request argument supplied: %s", k.Str)
		}
		return bad == nil
	})
	return root, bad
}

// parseItems normalizes a body's items as create normalizes input (ids assigned, types checked);
// params name items[i].
func (s *Server) parseItems(root gjson.Result, required bool) ([]json.RawMessage, error) {
	v := root.Get("items")
	if !v.Exists() || v.Type == gjson.Null {
		if required {
			return nil, badRequest("items", "Missing required parameter: 'items'.")
		}
		return nil, nil
	}
	if !v.IsArray() {
		return nil, badRequest("items", "Invalid type for 'items': expected an array of items, but got %s instead.", typeName(v))
	}
	n := len(v.Array())
	if n == 0 && !required {
		return nil, nil
	}
	if n > maxConversationItemsPerCall {
		return nil, badRequest("items", "Invalid 'items': at most %d items can be added at a time, got %d.", maxConversationItemsPerCall, n)
	}
	wrapped := gjson.Parse(`{"input":` + v.Raw + `}`)
	req := &request{}
	err := parseInput(objectOf(wrapped), req, limits{MaxInputItems: maxConversationItemsPerCall}, s.opts.NewID)
	if err == nil && len(req.References) > 0 {
		err = badRequest(fmt.Sprintf("input[%d].type", req.References[0]), "Item references cannot be added to a conversation; send the items themselves.")
	}
	var ae *APIError
	if errors.As(err, &ae) {
		c := *ae
		c.Param = "items" + strings.TrimPrefix(c.Param, "input")
		c.Message = strings.ReplaceAll(c.Message, "'input", "'items")
		return nil, &c
	}
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, raw := range req.Input {
		if id := itemID(raw); seen[id] {
			return nil, badRequest(fmt.Sprintf("items[%d].id", i), "Duplicate item id '%s'.", id)
		} else {
			seen[id] = true
		}
	}
	return req.Input, nil
}

func storeItems(raws []json.RawMessage) []store.Item {
	out := make([]store.Item, len(raws))
	for i, raw := range raws {
		out[i] = store.Item{ID: itemID(raw), Data: raw}
	}
	return out
}

func metadataOf(root gjson.Result) (json.RawMessage, error) {
	r := &request{}
	if err := parseMetadata(objectOf(root), r); err != nil {
		return nil, err
	}
	return r.Metadata, nil
}

func (s *Server) handleConversationCreate(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	root, err := s.conversationBody(w, r, conversationCreateFields)
	var items []json.RawMessage
	var md json.RawMessage
	if err == nil {
		items, err = s.parseItems(root, false)
	}
	if err == nil {
		md, err = metadataOf(root)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	c := &store.Conversation{ID: s.opts.NewID("conv"), Tenant: middleware.Tenant(ctx), CreatedAt: s.opts.Now(), Metadata: md}
	if err := s.convs.Create(ctx, c, storeItems(items)); err != nil {
		if errors.Is(err, store.ErrTooManyItems) {
			err = badRequest("items", "Invalid 'items': more than the limit of %d items per conversation.", s.convs.MaxItems())
		}
		writeError(w, convErr("create conversation", c.ID, err))
		return
	}
	writeJSON(w, conversationJSON(c))
}

func (s *Server) loadConv(w http.ResponseWriter, r *http.Request) (*store.Conversation, bool) {
	id := chi.URLParam(r, "id")
	c, err := s.convs.Get(r.Context(), middleware.Tenant(r.Context()), id)
	if err != nil {
		writeError(w, convErr("get conversation", id, err))
		return nil, false
	}
	return c, true
}

func (s *Server) handleConversationGet(w http.ResponseWriter, r *http.Request) {
	if c, ok := s.loadConv(w, r); ok {
		writeJSON(w, conversationJSON(c))
	}
}

func (s *Server) handleConversationUpdate(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	root, err := s.conversationBody(w, r, conversationUpdateFields)
	var md json.RawMessage
	if err == nil {
		if v := root.Get("metadata"); !v.Exists() {
			err = badRequest("metadata", "Missing required parameter: 'metadata'.")
		} else {
			md, err = metadataOf(root)
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	c, err := s.convs.SetMetadata(r.Context(), middleware.Tenant(r.Context()), id, md)
	if err != nil {
		writeError(w, convErr("update conversation", id, err))
		return
	}
	writeJSON(w, conversationJSON(c))
}

func (s *Server) handleConversationDelete(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := s.convs.Delete(r.Context(), middleware.Tenant(r.Context()), id); err != nil {
		writeError(w, convErr("delete conversation", id, err))
		return
	}
	out := []byte(`{"id":`)
	out = appendJSONString(out, id)
	writeJSON(w, json.RawMessage(append(out, `,"object":"conversation.deleted","deleted":true}`...)))
}

// itemList is the list object of items.
func itemList(items []store.Item, hasMore bool) json.RawMessage {
	out := []byte(`{"object":"list","data":[`)
	ids := make([]string, len(items))
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, listedItem(it.Data)...)
		ids[i] = it.ID
	}
	out = append(out, `],"first_id":`...)
	out = appendNullable(out, ids, 0)
	out = append(out, `,"last_id":`...)
	out = appendNullable(out, ids, len(ids)-1)
	out = append(out, `,"has_more":`...)
	out = strconv.AppendBool(out, hasMore)
	return append(out, '}')
}

func (s *Server) handleConversationItems(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, order, err := listQuery(q)
	if err != nil {
		writeError(w, err)
		return
	}
	c, ok := s.loadConv(w, r)
	if !ok {
		return
	}
	ids, hasMore, ok := pageIDs(c.ItemIDs, order, q.Get("after"), limit)
	if !ok {
		writeError(w, badRequest("after", "Invalid 'after': no item with id '%s' in this conversation.", q.Get("after")))
		return
	}
	items, err := s.convs.Items(r.Context(), c.Tenant, c.ID, ids)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = fmt.Errorf("%w: %w", errStoreUnavailable, err)
		}
		writeError(w, convErr("list conversation items", c.ID, err))
		return
	}
	writeJSON(w, itemList(items, hasMore))
}

// listQuery reads limit (1-100, default 20), order (asc or desc, default desc) and include.
// listQuery reads a list route's include, limit (1–100, default 20) and order (asc or desc,
// default desc) query parameters, checked in that order.
func listQuery(q map[string][]string) (int, string, error) {
	if err := checkIncludeQuery(q); err != nil {
		return 0, "", err
	}
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	limit := 20
	if v := get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return 0, "", badRequest("limit", "Invalid 'limit': expected an integer between 1 and 100.")
		}
		limit = n
	}
	order := get("order")
	switch order {
	case "":
		order = "desc"
	case "asc", "desc":
	default:
		return 0, "", badRequest("order", "Invalid 'order': expected 'asc' or 'desc'.")
	}
	return limit, order, nil
}

// pageIDs is one page of a list route: ids in the order asked for (ids itself is never
// modified), after the id after when it is set, at most limit of them; ok is false when after
// names none of ids.
func pageIDs(ids []string, order, after string, limit int) (page []string, hasMore, ok bool) {
	page = slices.Clone(ids)
	if order == "desc" {
		slices.Reverse(page)
	}
	if after != "" {
		i := indexOf(page, after)
		if i < 0 {
			return nil, false, false
		}
		page = page[i+1:]
	}
	if hasMore = len(page) > limit; hasMore {
		page = page[:limit]
	}
	return page, hasMore, true
}

func (s *Server) handleConversationItemsCreate(w http.ResponseWriter, r *http.Request) {
	if err := checkIncludeQuery(r.URL.Query()); err != nil {
		writeError(w, err)
		return
	}
	id := chi.URLParam(r, "id")
	root, err := s.conversationBody(w, r, conversationItemsCreateFields)
	var raws []json.RawMessage
	if err == nil {
		raws, err = s.parseItems(root, true)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	items := storeItems(raws)
	_, err = s.convs.AddItems(r.Context(), middleware.Tenant(r.Context()), id, items)
	switch {
	case errors.Is(err, store.ErrDuplicateItem):
		err = badRequest("items", "An item id is already in conversation '%s'.", id)
	case errors.Is(err, store.ErrTooManyItems):
		err = badRequest("items", "Invalid 'items': conversation '%s' would exceed the limit of %d items per conversation.", id, s.convs.MaxItems())
	}
	if err != nil {
		writeError(w, convErr("add conversation items", id, err))
		return
	}
	writeJSON(w, itemList(items, false))
}

func (s *Server) handleConversationItem(w http.ResponseWriter, r *http.Request) {
	if err := checkIncludeQuery(r.URL.Query()); err != nil {
		writeError(w, err)
		return
	}
	c, ok := s.loadConv(w, r)
	if !ok {
		return
	}
	item := chi.URLParam(r, "item")
	if !slices.Contains(c.ItemIDs, item) {
		writeError(w, itemNotFound(item))
		return
	}
	items, err := s.convs.Items(r.Context(), c.Tenant, c.ID, []string{item})
	if err != nil {
		writeError(w, convErr("get conversation item", c.ID, err))
		return
	}
	writeJSON(w, json.RawMessage(listedItem(items[0].Data)))
}

func itemNotFound(id string) *APIError {
	return &APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Message: fmt.Sprintf("Item with id '%s' not found.", id)}
}

func (s *Server) handleConversationItemDelete(w http.ResponseWriter, r *http.Request) {
	id, item := chi.URLParam(r, "id"), chi.URLParam(r, "item")
	tenant := middleware.Tenant(r.Context())
	if _, err := s.convs.Get(r.Context(), tenant, id); err != nil {
		writeError(w, convErr("get conversation", id, err))
		return
	}
	c, err := s.convs.DeleteItem(r.Context(), tenant, id, item)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, itemNotFound(item))
			return
		}
		writeError(w, convErr("delete conversation item", id, err))
		return
	}
	writeJSON(w, conversationJSON(c))
}
