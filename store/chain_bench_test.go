package store

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stitchllm/stitch/store/redistest"
)

// BenchmarkPutChild writes a conversation of about 100k ids turn by turn through PutChild, as
// Prompt.Commit does: each turn's prompt continues the previous one in place (render's arena, so
// the shared prefix needs no compare), adds 2,500 prompt ids and generates 300, its parent being
// the artifact the previous PutChild left. With the default MaxChain of 8, every ninth turn is a
// snapshot that re-bases the chain it ends. ns/op is the mean wall time over all turns; link_us
// and snapshot_us the mean process CPU time (every thread: GC, the Redis client) of each kind,
// steadier than wall time on a shared machine.
func BenchmarkPutChild(b *testing.B) {
	const (
		history = 100_000
		input   = 2_500
		gen     = 300
		turns   = 18 // two chains and their snapshots
	)
	all := realIDs(b, history+turns*(input+gen))
	// The turns, written once per round under fresh response ids.
	var conv []*Artifact
	promptLen := history
	for i := range turns {
		a := &Artifact{Tenant: "acme", Fingerprint: [32]byte{7}, Mode: ModeCanonical,
			PromptIDs: all[:promptLen:promptLen], GeneratedIDs: all[promptLen : promptLen+gen : promptLen+gen],
			PromptTextLen: 4 * promptLen, PromptTextDigest: TextDigest(fmt.Sprint(i)),
			ItemBounds: []ItemBound{{Start: 0, End: gen}}}
		for k := 0; k < promptLen; k += 40 { // a boundary per message of ~40 ids
			a.Boundaries = append(a.Boundaries, Boundary{TextOffset: 4 * k, TokenIndex: k})
		}
		conv = append(conv, a)
		promptLen += gen + input
	}
	addr := redistest.Start(b)
	for _, tiers := range []struct {
		name string
		l2   bool
	}{{"L1", false}, {"L1+Redis", true}} {
		b.Run("tiers="+tiers.name, func(b *testing.B) {
			s := newBenchTiered(b, addr, tiers.l2)
			var parent *Artifact
			var link, snap time.Duration
			var links, snaps int
			i := 0
			for b.Loop() {
				turn := i % turns
				if turn == 0 {
					parent = nil // a new conversation: its first turn a snapshot, not timed apart
				}
				a := *conv[turn]
				a.ResponseID = fmt.Sprintf("resp_%d_%d", i/turns, turn)
				start := processCPU(b)
				if err := s.PutChild(b.Context(), &a, parent); err != nil {
					b.Fatal(err)
				}
				took := processCPU(b) - start
				switch {
				case turn == 0:
				case len(a.Chain) == 0:
					snap += took
					snaps++
				default:
					link += took
					links++
				}
				parent = &a
				i++
			}
			if links > 0 {
				b.ReportMetric(float64(link.Microseconds())/float64(links), "link_us")
			}
			if snaps > 0 {
				b.ReportMetric(float64(snap.Microseconds())/float64(snaps), "snapshot_us")
			}
		})
		b.Run("tiers="+tiers.name+"/regenerate", func(b *testing.B) {
			// The same turn written again and again on a parent with MaxChain links below it, as
			// stitch bench's turn pass sends a turn (or a client regenerates an answer): each a
			// snapshot re-basing the chain, whose snapshot is by then the previous one's, longer
			// than the parent.
			s := newBenchTiered(b, addr, tiers.l2)
			var parent *Artifact
			for turn := range 9 {
				a := *conv[turn]
				a.ResponseID = fmt.Sprintf("resp_regen_%d", turn)
				if err := s.PutChild(b.Context(), &a, parent); err != nil {
					b.Fatal(err)
				}
				parent = &a
			}
			var cpu time.Duration
			i := 0
			for b.Loop() {
				a := *conv[9]
				a.ResponseID = fmt.Sprintf("resp_regen_9_%d", i)
				i++
				start := processCPU(b)
				if err := s.PutChild(b.Context(), &a, parent); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU(b) - start
				if len(a.Chain) != 0 {
					b.Fatalf("a turn on a parent with %d links below it: chain %v, want a snapshot", len(parent.Chain), a.Chain)
				}
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(i), "snapshot_us")
		})
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newBenchTiered is a Tiered with an L1 and, with l2, the Redis at addr.
func newBenchTiered(b *testing.B, addr string, l2 bool) *Tiered {
	sealer, err := NewSealer([]SealKey{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, SealerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	l1, err := NewL1(L1Options{MaxMB: 256})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l1.Close() })
	opts := TieredOptions{Sealer: sealer, TTL: time.Hour, L1: l1}
	if l2 {
		c := NewRedisClient(RedisOptions{Addrs: []string{addr}})
		b.Cleanup(func() { c.Close() })
		opts.L2 = NewRedisArtifacts(c, RedisArtifactsOptions{Prefix: "bench"})
	}
	return NewTiered(opts)
}
