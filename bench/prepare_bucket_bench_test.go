package bench

import (
	"context"
	"fmt"
	"testing"
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
		fullSamples := map[turnKey]prepSample{}
		for _, s := range full.rec.samples[bk.name] {
			fullSamples[s.key] = s
		}
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
