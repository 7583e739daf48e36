package sim

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, as vLLM exports them (counters are scraped with the _total suffix).
const (
	metricPrefixQueries = "vllm:prefix_cache_queries_total"
	metricPrefixHits    = "vllm:prefix_cache_hits_total"
	metricRunning       = "vllm:num_requests_running"
	metricWaiting       = "vllm:num_requests_waiting"
	metricSuccess       = "vllm:request_success_total"
	metricPromptTokens  = "vllm:prompt_tokens_total"
	metricGenTokens     = "vllm:generation_tokens_total"
	metricTTFT          = "vllm:time_to_first_token_seconds"
	metricKVUsage       = "vllm:kv_cache_usage_perc"
	metricErrors        = "sim_request_errors_total"
	metricFaults        = "sim_injected_faults_total"
)

// simMetrics is the Server's Prometheus registry and instruments.
type simMetrics struct {
	reg          *prometheus.Registry
	running      atomic.Int64
	success      *prometheus.CounterVec
	promptTokens prometheus.Counter
	genTokens    prometheus.Counter
	ttft         prometheus.Histogram
	errors       *prometheus.CounterVec
	faults       *prometheus.CounterVec
}

// newSimMetrics registers the metrics of s. The prefix-cache counters read the cache model itself,
// so they always agree with the cached_tokens reported in usage.
func newSimMetrics(s *Server) *simMetrics {
	m := &simMetrics{reg: prometheus.NewRegistry()}
	labels := prometheus.Labels{"model_name": s.opts.ServedModelName}
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: metricPrefixQueries, ConstLabels: labels,
			Help: "Prefix cache queries, in tokens."},
			func() float64 { return float64(s.cache.stats().queries) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: metricPrefixHits, ConstLabels: labels,
			Help: "Prefix cache hits, in tokens."},
			func() float64 { return float64(s.cache.stats().hits) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricRunning, ConstLabels: labels,
			Help: "Number of requests in model execution batches."},
			func() float64 { return float64(m.running.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricWaiting, ConstLabels: labels,
			Help: "Number of requests waiting to be processed (the simulator never queues)."},
			func() float64 { return 0 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricKVUsage, ConstLabels: labels,
			Help: "KV-cache usage: blocks held by running requests over capacity (1 = 100 percent)."},
			func() float64 { return float64(s.cache.stats().used) / float64(s.opts.KVBlocks) }),
	)
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricSuccess, ConstLabels: labels,
		Help: "Count of finished requests, by finish reason."}, []string{"finished_reason"})
	m.promptTokens = prometheus.NewCounter(prometheus.CounterOpts{Name: metricPromptTokens, ConstLabels: labels,
		Help: "Number of prefill tokens processed."})
	m.genTokens = prometheus.NewCounter(prometheus.CounterOpts{Name: metricGenTokens, ConstLabels: labels,
		Help: "Number of generation tokens processed."})
	m.ttft = prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricTTFT, ConstLabels: labels,
		Help:    "Histogram of time to first token in seconds.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricErrors,
		Help: "Requests refused before generation, by HTTP status."}, []string{"status"})
	m.faults = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricFaults,
		Help: "Injected faults, by kind (fail, drop)."}, []string{"kind"})
	m.reg.MustRegister(m.success, m.promptTokens, m.genTokens, m.ttft, m.errors, m.faults)
	for _, r := range []string{finishStop, finishLength, finishAbort} {
		m.success.WithLabelValues(r)
	}
	return m
}

// finished counts a generation that ended.
func (m *simMetrics) finished(g *generation) {
	m.success.WithLabelValues(g.finish).Inc()
	m.promptTokens.Add(float64(len(g.p.prompt)))
	m.genTokens.Add(float64(len(g.out)))
	if !g.firstAt.IsZero() {
		m.ttft.Observe(g.firstAt.Sub(g.start).Seconds())
	}
}
