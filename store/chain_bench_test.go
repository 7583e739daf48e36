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
		name   string
		l1, l2 bool
	}{{"L1", true, false}, {"L1+Redis", true, true}} {
		b.Run("tiers="+tiers.name, func(b *testing.B) {
			sealer, err := NewSealer([]SealKey{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, SealerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			opts := TieredOptions{Sealer: sealer, TTL: time.Hour}
			if tiers.l1 {
				l1, err := NewL1(L1Options{MaxMB: 256})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { l1.Close() })
				opts.L1 = l1
			}
			if tiers.l2 {
				c := NewRedisClient(RedisOptions{Addrs: []string{addr}})
				b.Cleanup(func() { c.Close() })
				opts.L2 = NewRedisArtifacts(c, RedisArtifactsOptions{Prefix: "bench"})
			}
			s := NewTiered(opts)
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
