package bench

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkPrepareBucket times canonical preparation over every sampled continuation of a bucket
// (not only the one closest to its nominal size), warm and cold. Cold runs the full render of
// the same turn between two canonical calls, outside the timer, so the canonical call finds its
// data evicted from the CPU caches by another conversation's work, as stitch bench's cold column.
func BenchmarkPrepareBucket(b *testing.B) {
	f := loadFixture(b)
	canon, full := f.timing[ModeCanonical], f.timing[ModeFull]
	for _, bk := range buckets {
		samples := canon.rec.samples[bk.name]
		fullSamples := byTurn(full.rec.samples[bk.name])
		for _, cold := range []bool{false, true} {
			b.Run(fmt.Sprintf("ctx=%s/cold=%v", bk.name, cold), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, s := range samples {
						if fs, ok := fullSamples[s.key]; cold && ok {
							b.StopTimer()
							if _, _, err := prepareRequest(context.Background(), full.timing, full.stop, fs.in); err != nil {
								b.Fatal(err)
							}
							b.StartTimer()
						}
						if _, _, err := prepareRequest(context.Background(), canon.timing, canon.stop, s.in); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(len(samples)), "samples")
			})
		}
	}
}

// BenchmarkPrepareRatio times the 100k bucket's sampled continuations as stitch bench's timing
// pass does (per turn a collection, then full once cold and five times warm, then canonical the
// same) and reports full / canonical of the p50s, warm and cold, with canonical's p50s in µs. Its
// ns/op is meaningless: compare the ratios of two builds' test binaries run alternately.
func BenchmarkPrepareRatio(b *testing.B) {
	f := loadFixture(b)
	canon, full := f.timing[ModeCanonical], f.timing[ModeFull]
	fullSamples := byTurn(full.rec.samples["100k"])
	var warmC, warmF, coldC, coldF []float64
	run := func(p *proxy, s prepSample) float64 {
		start := time.Now()
		if _, _, err := prepareRequest(context.Background(), p.timing, p.stop, s.in); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(start).Nanoseconds())
	}
	for b.Loop() {
		for _, s := range canon.rec.samples["100k"] {
			fs, ok := fullSamples[s.key]
			if !ok {
				continue
			}
			runtime.GC()
			coldF = append(coldF, run(full, fs))
			for range 5 {
				warmF = append(warmF, run(full, fs))
			}
			coldC = append(coldC, run(canon, s))
			for range 5 {
				warmC = append(warmC, run(canon, s))
			}
		}
	}
	if len(warmC) == 0 {
		b.Skip("no 100k sample in both modes")
	}
	p50 := func(x []float64) float64 { return percentile(x, 50) }
	b.ReportMetric(p50(warmF)/p50(warmC), "warm_ratio")
	b.ReportMetric(p50(coldF)/p50(coldC), "cold_ratio")
	b.ReportMetric(p50(warmC)/1e3, "canonical_warm_µs")
	b.ReportMetric(p50(coldC)/1e3, "canonical_cold_µs")
}

// byTurn indexes a mode's samples by turn, to pair them with another mode's.
func byTurn(samples []prepSample) map[turnKey]prepSample {
	m := make(map[turnKey]prepSample, len(samples))
	for _, s := range samples {
		m[s.key] = s
	}
	return m
}
