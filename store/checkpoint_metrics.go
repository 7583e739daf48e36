package store

import "github.com/prometheus/client_golang/prometheus"

// CheckpointStatser is a checkpoint store that counts its events: *Bolt,
// *RedisCheckpoints, *Memory and *Fallback (which adds its two stores' in).
type CheckpointStatser interface {
	CheckpointStats() CheckpointStats
}

// CheckpointCollector exports a checkpoint store's counters (stitch_checkpoint_*)
// read at scrape time. Register it on the registry main passes around:
//
//	reg.MustRegister(store.NewCheckpointCollector(checkpoints))
type CheckpointCollector struct {
	s                                   CheckpointStatser
	corrupt, diverted, queued, replayed *prometheus.Desc
	republished, localReads, followed   *prometheus.Desc
	unproven                            *prometheus.Desc
}

var _ prometheus.Collector = (*CheckpointCollector)(nil)

// NewCheckpointCollector returns a collector for s. It panics if s is nil.
func NewCheckpointCollector(s CheckpointStatser) *CheckpointCollector {
	if s == nil {
		panic("store: NewCheckpointCollector with nil store")
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("stitch_checkpoint_"+name, help, labels, nil)
	}
	return &CheckpointCollector{
		s:           s,
		corrupt:     d("corrupt_total", "Checkpoint or item reads that found a corrupt or unverifiable value (answered as not found)."),
		diverted:    d("items_diverted_total", "Items stored under a derived id because their id was already stored with other bytes."),
		queued:      d("replay_queued", "Writes and deletes made during a Redis outage, waiting in the durable replay queue."),
		replayed:    d("replayed_total", "Queued writes and deletes by result (ok: delivered to Redis; dropped: deleted meanwhile or refused).", "result"),
		republished: d("republished_total", "Local copies written back to a Redis that had lost them."),
		localReads:  d("local_reads_total", "Reads answered from this pod's local copy (Redis unavailable or missing the record)."),
		followed:    d("deletions_followed_total", "Deletions announced on Redis's stitch:deletions stream (by any pod) applied to this pod's local store."),
		unproven:    d("unproven_misses_total", "Reads Redis answered \"not found\" that were answered 503 (retry) instead: store trouble within the settle time, or a pod whose lease does not vouch (it may hold queued responses)."),
	}
}

// Describe implements prometheus.Collector.
func (c *CheckpointCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.corrupt, c.diverted, c.queued, c.replayed, c.republished, c.localReads, c.followed, c.unproven} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *CheckpointCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s.CheckpointStats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.corrupt, s.Corrupt)
	counter(c.diverted, s.Diverted)
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(s.Queued))
	counter(c.replayed, s.Replayed, "ok")
	counter(c.replayed, s.Dropped, "dropped")
	counter(c.republished, s.Republished)
	counter(c.localReads, s.LocalReads)
	counter(c.followed, s.DeletionsFollowed)
	counter(c.unproven, s.Unproven)
}
