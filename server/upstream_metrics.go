package server

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path"
	"time"

	"github.com/stitchllm/stitch/middleware"
)

// upstreamMetricsTimeout bounds one scrape of the model server's /metrics.
const upstreamMetricsTimeout = 5 * time.Second

// handleUpstreamMetrics serves the model server's own GET /metrics (vLLM's vllm:* series: queue
// depth, KV cache usage, prefix-cache counters) on stitch's port, at Options.UpstreamMetricsPath.
// A router that scrapes model-server metrics on each endpoint's port (llm-d's EPP, whose
// metrics-data-source path is configurable) then reads the pod's load through a sidecar stitch
// (docs/operator-guide.md, "Fleet"). Like /metrics it is unauthenticated: it carries counters,
// no tenant's data. The body is vLLM's, unchanged; a scrape that fails answers 502.
func (s *Server) handleUpstreamMetrics(w http.ResponseWriter, r *http.Request) {
	target, err := url.Parse(s.opts.Upstream.BaseURL())
	if err != nil || target.Host == "" {
		middleware.WriteError(w, http.StatusNotFound, "invalid_request_error", "", "unknown_url", "the upstream serves no HTTP /metrics")
		return
	}
	target.Path = path.Join("/", target.Path, "metrics")
	ctx, cancel := context.WithTimeout(r.Context(), upstreamMetricsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		middleware.WriteError(w, http.StatusBadGateway, "upstream_error", "", "", "upstream metrics: "+err.Error())
		return
	}
	if a := r.Header.Get("Accept"); a != "" {
		req.Header.Set("Accept", a) // content negotiation (OpenMetrics or text) is the scraper's
	}
	resp, err := s.opts.Upstream.HTTPClient().Do(req)
	if err != nil {
		middleware.WriteError(w, http.StatusBadGateway, "upstream_error", "", "", "upstream metrics unreachable")
		return
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}
