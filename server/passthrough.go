package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/stitchllm/stitch/upstream"
)

// passthrough proxies every other path (/v1/models, /v1/chat/completions, /v1/completions, /tokenize,
// …) to vLLM unchanged, flushing streamed bodies as they arrive. The client's API key is replaced by
// the upstream's (the tenant was already authenticated).
func (s *Server) passthrough() http.Handler {
	target, err := url.Parse(s.opts.Upstream.BaseURL())
	if err != nil {
		// The base URL was validated by configs; a bad one here is a wiring bug.
		panic("server: upstream base URL: " + err.Error())
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("api-key")
		},
		Transport:     s.opts.Upstream.HTTPClient().Transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.Warn("passthrough failed", "path", r.URL.Path, "err", err)
			writeError(w, classify(upstreamErr(err)))
		},
	}
}

// upstreamErr classifies a transport error of the pass-through proxy.
func upstreamErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", upstream.ErrUnreachable, err)
}
