package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/store"
)

// loadCheckpoint reads a tenant's checkpoint; unknown and foreign ids are both ErrNotFound.
func (s *Server) loadCheckpoint(r *http.Request, id string) (*store.Checkpoint, error) {
	cp, err := s.opts.Checkpoints.GetResponse(r.Context(), middleware.Tenant(r.Context()), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		nf := notFound(id)
		nf.Err = err // store.ErrDeleted tells a deleted response from one never stored
		return nil, nf
	case errors.Is(err, store.ErrUnavailable):
		return nil, fmt.Errorf("get response %s: %w: %w", id, errStoreUnavailable, err)
	case err != nil:
		return nil, fmt.Errorf("get response %s: %w", id, err)
	}
	return cp, nil
}

func (s *Server) handleRetrieve(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	streamed, after, err := retrieveStream(r) // background.go
	if err != nil {
		writeError(w, err)
		return
	}
	if streamed {
		s.retrieveStreamed(w, r, id, after)
		return
	}
	cp, err := s.loadCheckpoint(r, id)
	if err == nil {
		writeJSON(w, cp.Response)
		return
	}
	// Not stored (yet): a background response in progress, or one that ended without a
	// checkpoint (cancelled, failed before it was stored). A deleted response stays deleted. A
	// miss the store cannot prove (503: a write queued on another pod, Redis trouble) may still
	// be a run in progress: the run answers if there is one, else the 503 stands.
	unproven := errors.Is(err, store.ErrUnavailable)
	if (!errors.Is(err, store.ErrNotFound) && !unproven) || errors.Is(err, store.ErrDeleted) {
		writeError(w, err)
		return
	}
	run, rerr := s.loadRun(r.Context(), middleware.Tenant(r.Context()), id)
	if rerr != nil {
		if !errors.Is(rerr, store.ErrNotFound) && !unproven {
			err = rerr
		}
		writeError(w, err)
		return
	}
	writeJSON(w, json.RawMessage(runResponse(run)))
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	tenant := middleware.Tenant(r.Context())
	err := s.opts.Checkpoints.DeleteResponse(r.Context(), tenant, id)
	// A background response's run goes too (a running one stops: its owner's next write finds
	// it gone); deleting only a run (in progress, cancelled) is deleting the response.
	if rerr := s.bg.runs.Delete(r.Context(), tenant, id); rerr == nil {
		s.bg.stop(runKey(tenant, id), errRunDeleted)
		if errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrDeleted) {
			err = nil
		}
	} else if !errors.Is(rerr, store.ErrNotFound) && err == nil {
		s.log.Warn("delete background response run", "response_id", id, "err", rerr)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, notFound(id))
		return
	case errors.Is(err, store.ErrUnavailable):
		writeError(w, fmt.Errorf("delete response %s: %w: %w", id, errStoreUnavailable, err))
		return
	case err != nil:
		writeError(w, fmt.Errorf("delete response %s: %w", id, err))
		return
	}
	writeJSON(w, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, "response.deleted", true})
}

// handleInputItems lists the items that formed a response's input: the whole conversation before
// its output (earlier turns included), newest first by default, as OpenAI's list API pages them.
func (s *Server) handleInputItems(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, order, err := listQuery(q) // conversations.go
	if err != nil {
		writeError(w, err)
		return
	}
	cp, err := s.loadCheckpoint(r, chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, err)
		return
	}
	ids, hasMore, ok := pageIDs(cp.ConversationItemIDs[:len(cp.ConversationItemIDs)-len(cp.OutputItemIDs)], order, q.Get("after"), limit)
	if !ok {
		writeError(w, badRequest("after", "Invalid 'after': no input item with id '%s' in this response.", q.Get("after")))
		return
	}
	items, err := s.opts.Checkpoints.GetItems(r.Context(), middleware.Tenant(r.Context()), ids)
	if err != nil {
		switch {
		case errors.Is(err, store.ErrNotFound): // missing or corrupt (ErrCorrupt wraps it): never a 500
			s.log.Warn("input items: stored item unreadable", "response_id", cp.ID, "err", err)
			writeError(w, &APIError{Status: http.StatusNotFound, Type: "invalid_request_error",
				Message: fmt.Sprintf("The input items of response '%s' are no longer available.", cp.ID), Err: err})
			return
		case errors.Is(err, store.ErrUnavailable):
			err = fmt.Errorf("%w: %w", errStoreUnavailable, err)
		}
		writeError(w, fmt.Errorf("input items: %w", err))
		return
	}
	out := []byte(`{"object":"list","data":[`)
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, listedItem(it.Data)...) // the spec's item shape (items.go)
	}
	out = append(out, `],"first_id":`...)
	out = appendNullable(out, ids, 0)
	out = append(out, `,"last_id":`...)
	out = appendNullable(out, ids, len(ids)-1)
	out = append(out, `,"has_more":`...)
	out = strconv.AppendBool(out, hasMore)
	out = append(out, '}')
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func appendNullable(dst []byte, ids []string, i int) []byte {
	if i < 0 || i >= len(ids) {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, ids[i])
}

func indexOf(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// itemID reads an item's id.
func itemID(item []byte) string { return gjson.GetBytes(item, "id").Str }
