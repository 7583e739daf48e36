package store_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/store/redistest"
	"github.com/stitchllm/stitch/store/storetest"
)

// Artifact chains (store/chain.go): every test runs on L1 alone, a real Redis
// alone and both.

var chainStart = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

type chainTiers struct {
	name   string
	l1, l2 bool
}

var allChainTiers = []chainTiers{{"L1", true, false}, {"L2", false, true}, {"L1+L2", true, true}}

// newChainStore returns a Tiered on the tiers named, with links at most
// maxChain deep and a one-hour TTL.
func newChainStore(t *testing.T, tiers chainTiers, redisAddr string, clock *storetest.Clock, maxChain int) *store.Tiered {
	t.Helper()
	opts := store.TieredOptions{Sealer: newSealer(t, clock.Now), Now: clock.Now, TTL: time.Hour, MaxChain: maxChain}
	if tiers.l1 {
		opts.L1 = newL1(t, store.L1Options{MaxMB: 16})
	}
	if tiers.l2 {
		opts.L2 = newRedisArtifacts(t, redisAddr)
	}
	return store.NewTiered(opts)
}

// turnAfter is the artifact of the turn after prev (nil: the first): its
// prompt is prev's prompt and generated ids then input new ids, as exact mode
// and most canonical turns build it; it generates gen ids.
func turnAfter(r *rand.Rand, tenant, id string, prev *store.Artifact, input, gen int) *store.Artifact {
	a := &store.Artifact{Tenant: tenant, ResponseID: id, Fingerprint: [32]byte{7}, Mode: store.ModeCanonical,
		PromptTextDigest: store.TextDigest(id)}
	if prev != nil {
		a.PromptIDs = append(slices.Clone(prev.PromptIDs), prev.GeneratedIDs...)
		a.Boundaries = slices.Clone(prev.Boundaries)
		a.PromptTextLen = prev.PromptTextLen + 4*len(prev.GeneratedIDs)
	}
	a.Boundaries = append(a.Boundaries, store.Boundary{TextOffset: a.PromptTextLen, TokenIndex: len(a.PromptIDs), PrefixDigest: store.TextDigest(id + "@")})
	for range input {
		a.PromptIDs = append(a.PromptIDs, r.Uint32N(151_000))
	}
	a.PromptTextLen += 4 * input
	for range gen {
		a.GeneratedIDs = append(a.GeneratedIDs, r.Uint32N(151_000))
	}
	a.ItemBounds = []store.ItemBound{{Start: 0, End: gen}}
	return a
}

// sameArtifact compares what was put with what was read, apart from the
// fields the store sets (version, chain, expiry).
func sameArtifact(t *testing.T, what string, want, got *store.Artifact) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(store.Artifact{}, "Version", "Chain", "ExpiresAt")); diff != "" {
		t.Fatalf("%s (-put +got):\n%.2000s", what, diff)
	}
}

// chainConv is a conversation written turn by turn through PutChild.
type chainConv struct {
	t      *testing.T
	s      *store.Tiered
	r      *rand.Rand
	tenant string
	put    []*store.Artifact // what each turn put (as PutChild left it)
}

// next writes the turn after parent (an index into put; -1 for none), passing
// as parent what the hot cache would (the artifact put) or, with viaGet, what
// the digest path reads back. It returns the new turn's index.
func (c *chainConv) next(parent int, viaGet bool, input, gen int) int {
	c.t.Helper()
	var prev *store.Artifact
	if parent >= 0 {
		prev = c.put[parent]
		if viaGet {
			got, _, err := c.s.Get(c.t.Context(), c.tenant, prev.ResponseID)
			if err != nil {
				c.t.Fatalf("get parent %s: %v", prev.ResponseID, err)
			}
			prev = got
		}
	}
	a := turnAfter(c.r, c.tenant, fmt.Sprintf("resp_%s_%03d", c.tenant, len(c.put)), prev, input, gen)
	if err := c.s.PutChild(c.t.Context(), a, prev); err != nil {
		c.t.Fatalf("put turn %d: %v", len(c.put), err)
	}
	c.put = append(c.put, a)
	return len(c.put) - 1
}

// checkAll reads every turn back and compares it with what was put.
func (c *chainConv) checkAll(what string) {
	c.t.Helper()
	for i, want := range c.put {
		got, _, err := c.s.Get(c.t.Context(), c.tenant, want.ResponseID)
		if err != nil {
			c.t.Fatalf("%s: get turn %d: %v", what, i, err)
		}
		sameArtifact(c.t, fmt.Sprintf("%s: turn %d", what, i), want, got)
	}
}

func (c *chainConv) ids() []string {
	ids := make([]string, len(c.put))
	for i, a := range c.put {
		ids[i] = a.ResponseID
	}
	return ids
}

// TestChainSnapshotBoundary: links are at most MaxChain deep; the turn after
// is a full snapshot and the chain it ends is re-based on it, every turn
// reading back the same artifact throughout, and each tier holding, per
// conversation, at most 1.5× the latest turn's full artifact.
func TestChainSnapshotBoundary(t *testing.T) {
	addr := redistest.Start(t)
	for _, tiers := range allChainTiers {
		t.Run(tiers.name, func(t *testing.T) {
			const maxChain = 4
			clock := storetest.NewClock(chainStart)
			s := newChainStore(t, tiers, addr, clock, maxChain)
			c := &chainConv{t: t, s: s, r: rand.New(rand.NewPCG(1, 2)), tenant: "acme"}
			for turn := range 20 {
				i := c.next(turn-1, turn%3 == 0, 300, 120)
				if got, want := len(c.put[i].Chain), turn%(maxChain+1); got != want {
					t.Fatalf("turn %d: %d links below, want %d", turn, got, want)
				}
				if turn == maxChain+1 {
					// The snapshot re-based the links before it: turn 2 now extends the snapshot.
					got, _, err := s.Get(t.Context(), "acme", c.put[2].ResponseID)
					if err != nil {
						t.Fatal(err)
					}
					if len(got.Chain) != 1 || got.Chain[0] != c.put[i].ResponseID {
						t.Fatalf("turn 2 after the snapshot: chain %v, want [%s]", got.Chain, c.put[i].ResponseID)
					}
				}
				c.clockStep(clock)
			}
			c.checkAll("after 20 turns")
			if st := s.Stats(); st.Rebased == 0 {
				t.Errorf("no link re-based: %+v", st)
			}
			full, err := s.FullBytes(t.Context(), "acme", c.put[len(c.put)-1].ResponseID)
			if err != nil {
				t.Fatal(err)
			}
			l1, l2, err := s.Footprint(t.Context(), "acme", c.ids())
			if err != nil {
				t.Fatal(err)
			}
			for _, tier := range []struct {
				name  string
				on    bool
				bytes int64
			}{{"L1", tiers.l1, l1}, {"L2", tiers.l2, l2}} {
				if !tier.on {
					continue
				}
				if ratio := float64(tier.bytes) / float64(full); ratio > 1.5 {
					t.Errorf("%s holds %d bytes for the conversation, %.2f× its latest full artifact (%d)", tier.name, tier.bytes, ratio, full)
				} else {
					t.Logf("%s holds %d bytes, %.2f× the latest full artifact (%d bytes; one per turn would be %.1f×)", tier.name, tier.bytes, ratio, full, float64(len(c.put))/2)
				}
			}
		})
	}
}

func (c *chainConv) clockStep(clock *storetest.Clock) { clock.Advance(time.Second) }

// TestChainMissingMiddleLink: a deleted link makes the artifacts extending it
// read as not found (a miss: the caller renders in full); the turns below it
// still read, and a turn written with no parent starts a new chain.
func TestChainMissingMiddleLink(t *testing.T) {
	addr := redistest.Start(t)
	for _, tiers := range allChainTiers {
		t.Run(tiers.name, func(t *testing.T) {
			clock := storetest.NewClock(chainStart)
			s := newChainStore(t, tiers, addr, clock, 8)
			c := &chainConv{t: t, s: s, r: rand.New(rand.NewPCG(3, 4)), tenant: "acme"}
			for turn := range 6 {
				c.next(turn-1, false, 200, 50)
			}
			if err := s.Delete(t.Context(), "acme", c.put[2].ResponseID); err != nil {
				t.Fatal(err)
			}
			for i, a := range c.put {
				got, tier, err := s.Get(t.Context(), "acme", a.ResponseID)
				switch {
				case i < 2 && err != nil:
					t.Errorf("turn %d below the missing link: %v", i, err)
				case i < 2:
					sameArtifact(t, fmt.Sprintf("turn %d", i), a, got)
				case !errors.Is(err, store.ErrNotFound) || tier != store.TierNone:
					t.Errorf("turn %d over the missing link: %q, %v; want ErrNotFound", i, tier, err)
				}
			}
			// The next turn found nothing to extend: a full snapshot.
			c.put = c.put[:0]
			c.next(-1, false, 1500, 50)
			c.next(0, true, 100, 50)
			c.checkAll("new chain")
		})
	}
}

// TestChainExpiredParent: a link never outlives its base (its expiry is
// clamped to the base's, so both read as expired together), and a turn whose
// parent has less than half its lifetime left is a fresh snapshot instead.
func TestChainExpiredParent(t *testing.T) {
	addr := redistest.Start(t)
	for _, tiers := range allChainTiers {
		t.Run(tiers.name, func(t *testing.T) {
			clock := storetest.NewClock(chainStart)
			s := newChainStore(t, tiers, addr, clock, 8)
			c := &chainConv{t: t, s: s, r: rand.New(rand.NewPCG(5, 6)), tenant: "acme"}
			c.next(-1, false, 500, 50)
			clock.Advance(20 * time.Minute) // 40 minutes left: more than half an hour
			c.next(0, false, 100, 50)
			if len(c.put[1].Chain) != 1 || !c.put[1].ExpiresAt.Equal(c.put[0].ExpiresAt) {
				t.Fatalf("turn 1: chain %v expiring %v; want a link expiring with its base at %v", c.put[1].Chain, c.put[1].ExpiresAt, c.put[0].ExpiresAt)
			}
			clock.Advance(15 * time.Minute) // 25 minutes left: a snapshot
			c.next(1, true, 100, 50)
			if len(c.put[2].Chain) != 0 || !c.put[2].ExpiresAt.Equal(clock.Now().Add(time.Hour)) {
				t.Fatalf("turn 2: chain %v expiring %v; want a fresh snapshot", c.put[2].Chain, c.put[2].ExpiresAt)
			}
			c.checkAll("before expiry")
			clock.Advance(26 * time.Minute) // turns 0 and 1 expired; 1 was re-based on 2 but kept its expiry
			for i, a := range c.put[:2] {
				if _, _, err := s.Get(t.Context(), "acme", a.ResponseID); !errors.Is(err, store.ErrExpired) && !errors.Is(err, store.ErrNotFound) {
					t.Errorf("turn %d past its expiry: %v, want ErrExpired (or ErrNotFound once evicted)", i, err)
				}
			}
			got, _, err := s.Get(t.Context(), "acme", c.put[2].ResponseID)
			if err != nil {
				t.Fatalf("the snapshot: %v", err)
			}
			sameArtifact(t, "the snapshot", c.put[2], got)
			// A link on the snapshot expires with it.
			c.next(2, false, 100, 50)
			clock.Advance(time.Hour)
			if _, _, err := s.Get(t.Context(), "acme", c.put[3].ResponseID); !errors.Is(err, store.ErrExpired) && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("link past its base's expiry: %v, want ErrExpired", err)
			}
		})
	}
}

// TestChainBranchFromOldTurn: branches from old turns (before snapshots that
// re-based them) extend them like any other turn; every turn of every branch
// reads back unchanged while the branches grow past their own snapshots.
func TestChainBranchFromOldTurn(t *testing.T) {
	addr := redistest.Start(t)
	for _, tiers := range allChainTiers {
		t.Run(tiers.name, func(t *testing.T) {
			clock := storetest.NewClock(chainStart)
			s := newChainStore(t, tiers, addr, clock, 3)
			c := &chainConv{t: t, s: s, r: rand.New(rand.NewPCG(7, 8)), tenant: "acme"}
			for turn := range 10 {
				c.next(turn-1, turn%2 == 0, 200, 60)
			}
			last := 2 // branch from turn 2, twice (a regenerate), then grow the branches
			for b := range 2 {
				last = c.next(2, true, 150, 60)
				for turn := range 6 {
					last = c.next(last, (turn+b)%2 == 0, 120, 40)
				}
				c.checkAll(fmt.Sprintf("branch %d", b))
			}
			c.next(9, true, 100, 40) // the main line goes on
			c.checkAll("main line after the branches")
		})
	}
}

// TestChainCrossTenantParent: a parent of another tenant is never used (the
// artifact is stored in full), and nothing of one tenant reads another's.
func TestChainCrossTenantParent(t *testing.T) {
	addr := redistest.Start(t)
	for _, tiers := range allChainTiers {
		t.Run(tiers.name, func(t *testing.T) {
			clock := storetest.NewClock(chainStart)
			s := newChainStore(t, tiers, addr, clock, 8)
			acme := &chainConv{t: t, s: s, r: rand.New(rand.NewPCG(9, 10)), tenant: "acme"}
			acme.next(-1, false, 800, 50)
			r := rand.New(rand.NewPCG(11, 12))
			evil := turnAfter(r, "evil", "resp_evil_000", acme.put[0], 20, 10)
			if err := s.PutChild(t.Context(), evil, acme.put[0]); err != nil {
				t.Fatal(err)
			}
			if len(evil.Chain) != 0 {
				t.Fatalf("an artifact extends another tenant's: chain %v", evil.Chain)
			}
			if err := s.Delete(t.Context(), "acme", acme.put[0].ResponseID); err != nil {
				t.Fatal(err)
			}
			got, _, err := s.Get(t.Context(), "evil", evil.ResponseID)
			if err != nil {
				t.Fatalf("the other tenant's artifact, after its would-be parent was deleted: %v", err)
			}
			sameArtifact(t, "evil", evil, got)
			if _, _, err := s.Get(t.Context(), "acme", evil.ResponseID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("acme reads evil's artifact: %v", err)
			}
		})
	}
}
