package server

import "github.com/prometheus/client_golang/prometheus"

// metrics are the turn-level Prometheus metrics. Names are part of the operator guide.
type metrics struct {
	responses    *prometheus.CounterVec   // by final status
	resolutions  *prometheus.CounterVec   // artifact outcome per continuation
	promptTokens *prometheus.CounterVec   // source=reused|rendered
	prepare      *prometheus.HistogramVec // path=full|fast
	ttft         prometheus.Histogram
	cachedTokens prometheus.Counter
	// promptEchoMismatch counts streams whose prompt echo was not the prompt stitch sent.
	promptEchoMismatch prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stitch_responses_total", Help: "Responses by final status (completed, incomplete, failed, cancelled).",
		}, []string{"status"}),
		resolutions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stitch_artifact_resolutions_total", Help: "How each turn's prompt was prepared: hit_local, hit_portable, miss, expired, invalid, diverged, disabled, new.",
		}, []string{"outcome"}),
		promptTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stitch_prompt_tokens_total", Help: "Prompt tokens sent upstream, by source: reused from an artifact or rendered and tokenized now.",
		}, []string{"source"}),
		prepare: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "stitch_prepare_seconds", Help: "Time to prepare a turn's prompt ids (resolve, render, tokenize, encode the request), by path.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 3, 12),
		}, []string{"path"}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "stitch_ttft_seconds", Help: "Time from request to the first upstream token.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		cachedTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stitch_upstream_cached_tokens_total", Help: "Prompt tokens vLLM reported as prefix-cache hits.",
		}),
		promptEchoMismatch: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stitch_prompt_echo_mismatch_total",
			Help: "Generations whose first chunk echoed prompt ids (prompt_token_ids) other than the bytes stitch sent: vLLM ran another prompt, or wrote the echo another way.",
		}),
	}
	reg.MustRegister(m.responses, m.resolutions, m.promptTokens, m.prepare, m.ttft, m.cachedTokens, m.promptEchoMismatch)
	return m
}
