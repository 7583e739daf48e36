package store

import "github.com/prometheus/client_golang/prometheus"

// Collector exports a Tiered store's counters as Prometheus metrics, read from
// Stats at scrape time. The package registers nothing itself: register the
// collector on the registry main passes around,
//
//	reg.MustRegister(store.NewCollector(tiered))
//
// Metric names start with stitch_artifact_; see testdata/metrics.golden.
type Collector struct {
	t *Tiered

	l1Entries, l1Capacity, l1Requests, l1Collisions *prometheus.Desc
	l1Sets, l1Evictions                             *prometheus.Desc
	l2Requests, l2SetErrors, rejected, rebased      *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a collector for t. It panics if t is nil.
func NewCollector(t *Tiered) *Collector {
	if t == nil {
		panic("store: NewCollector with nil Tiered")
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("stitch_artifact_"+name, help, labels, nil)
	}
	return &Collector{
		t:            t,
		l1Entries:    d("cache_entries", "Artifacts held in the local (L1) cache."),
		l1Capacity:   d("cache_bytes", "Bytes allocated for local (L1) cache entries (never above the configured MiB cap)."),
		l1Requests:   d("l1_requests_total", "L1 lookups by result.", "result"),
		l1Collisions: d("l1_collisions_total", "L1 lookups that hit another key with the same 64-bit hash (reported as misses)."),
		l1Sets:       d("l1_sets_total", "L1 writes by result (ok, error, too_large).", "result"),
		l1Evictions:  d("evictions_total", "Local (L1) cache entries removed, by reason (expired, no_space, deleted).", "reason"),
		l2Requests:   d("l2_requests_total", "Portable (L2) lookups by result (hit, miss, error).", "result"),
		l2SetErrors:  d("l2_set_errors_total", "Failed L2 writes."),
		rejected:     d("rejected_total", "Artifacts found but not usable, by reason (invalid, expired).", "reason"),
		rebased:      d("rebased_total", "Stored links rewritten onto a new full snapshot (artifact chains re-based)."),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.l1Entries, c.l1Capacity, c.l1Requests, c.l1Collisions,
		c.l1Sets, c.l1Evictions, c.l2Requests, c.l2SetErrors, c.rejected, c.rebased} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.t.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	if c.t.l1 != nil {
		gauge(c.l1Entries, float64(s.L1.Entries))
		gauge(c.l1Capacity, float64(s.L1.CapacityBytes))
		counter(c.l1Requests, s.L1.Hits, "hit")
		counter(c.l1Requests, s.L1.Misses, "miss")
		counter(c.l1Collisions, s.L1.Collisions)
		counter(c.l1Sets, s.L1.Sets, "ok")
		counter(c.l1Sets, s.L1.SetErrors, "error")
		counter(c.l1Sets, s.L1.TooLarge, "too_large")
		counter(c.l1Evictions, s.L1.EvictedExpired, "expired")
		counter(c.l1Evictions, s.L1.EvictedNoSpace, "no_space")
		counter(c.l1Evictions, s.L1.Deleted, "deleted")
	}
	if c.t.l2 != nil {
		counter(c.l2Requests, s.L2Hits, "hit")
		counter(c.l2Requests, s.L2Misses, "miss")
		counter(c.l2Requests, s.L2Errors, "error")
		counter(c.l2SetErrors, s.L2SetErrors)
	}
	counter(c.rejected, s.Invalid, "invalid")
	counter(c.rejected, s.Expired, "expired")
	counter(c.rebased, s.Rebased)
}
