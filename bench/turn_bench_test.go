package bench

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkTurn sends one continuation at 1k, 10k and 100k tokens again, whole (parse, store
// reads, preparation, upstream request, stream handling, persistence), through a full-render and
// a canonical proxy in front of an in-process simulator without latency, down the workload's
// path: the hot entry put back before each (canonical), as stitch bench's turn pass does. ns/op
// is wall time and includes the simulator's work; turn_cpu_ms is the process CPU per turn (p50),
// simulator included. Run with -cpuprofile to see where a whole turn goes.
func BenchmarkTurn(b *testing.B) {
	f := loadFixture(b)
	for _, mode := range []Mode{ModeFull, ModeCanonical} {
		p := f.timing[mode]
		run := &modeRun{result: &ModeResult{Mode: string(mode)}, proxy: p, bodies: f.bodies[mode]}
		for _, bk := range buckets {
			s, ok := f.inputs[mode][bk.name]
			if !ok {
				continue
			}
			b.Run(fmt.Sprintf("mode=%s/ctx=%s", mode, bk.name), func(b *testing.B) {
				c := &replayConn{addr: p.url[len("http://"):]}
				defer c.close()
				sl := turnSlot{run: run, sample: s, body: f.bodies[mode][s.key]}
				var t TurnTiming
				b.ReportAllocs()
				for b.Loop() {
					if err := c.replay(context.Background(), sl, pathHot, &t); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(percentile(t.CPUMS, 50), "turn_cpu_ms")
				b.ReportMetric(float64(s.tokens), "tokens")
			})
		}
	}
}
