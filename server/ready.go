package server

import (
	"context"
	"net/http"
	"sort"
	"time"
)

// readyTimeout bounds one readiness check (health, and the probe generation when stalled).
const readyTimeout = 2 * time.Second

// defaultWriteTimeout is Limits.WriteTimeout's default.
const defaultWriteTimeout = 60 * time.Second

func writeTimeout(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return defaultWriteTimeout
	case d < 0:
		return 0
	}
	return d
}

// stallReporter is the optional capability of an Upstream that tracks timeouts (upstream.Client).
type stallReporter interface {
	Stalled() bool
	Probe(ctx context.Context, model string) error
}

// handleReady answers 200 when the shared store (Options.StoreReady) answers and the upstream is
// healthy and not stuck. /health alone is not
// enough: an engine can hang while its API server still answers it. When the upstream's latest
// generation event was a timeout, a one-token probe generation must succeed for the pod to count
// as ready again (so a pod taken out of rotation can come back without traffic).
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	// The shared store first: with Redis answering nothing every continuation and every
	// background response fails (503), though the model server is fine. ?store=ignore leaves it
	// out, for operators who keep pods in rotation through a Redis outage (new responses are
	// still stored on the pod and queued).
	if s.opts.StoreReady != nil && r.URL.Query().Get("store") != "ignore" {
		if err := s.opts.StoreReady(ctx); err != nil {
			http.Error(w, "response store not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	if err := s.opts.Upstream.Health(ctx); err != nil {
		http.Error(w, "upstream not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	// After a timeout, or a generation that came back as text without ids (every request would
	// then fail 502 until the upstream honours return_token_ids again), the pod stays out of
	// rotation until a probe generation succeeds with ids.
	noIDs := s.noTokenIDs.Load()
	sr, probes := s.opts.Upstream.(stallReporter)
	if noIDs && !probes {
		http.Error(w, "upstream returned text without token ids (it ignores return_token_ids)", http.StatusServiceUnavailable)
		return
	}
	if probes && (noIDs || sr.Stalled()) {
		if err := sr.Probe(ctx, s.probeModel()); err != nil {
			msg := "upstream stalled: generations time out (" + err.Error() + ")"
			if noIDs {
				msg = "upstream returns no token ids: " + err.Error()
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		s.noTokenIDs.Store(false)
	}
	w.Write([]byte("ok\n"))
}

// probeModel is the served model a readiness probe names (the first by name, for stability).
func (s *Server) probeModel() string {
	names := make([]string, 0, len(s.opts.Models))
	for name := range s.opts.Models {
		names = append(names, name)
	}
	sort.Strings(names)
	return names[0]
}
