package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stitchllm/stitch/store"
)

// Artifacts is the artifact-store contract the suite checks (*store.Tiered).
type Artifacts interface {
	Get(ctx context.Context, tenant, id string) (*store.Artifact, store.Tier, error)
	Put(ctx context.Context, a *store.Artifact) error
	Delete(ctx context.Context, tenant, id string) error
}

// Clock is a settable clock for expiry tests, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock set to t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// SampleArtifact returns a valid artifact for tenant and response id with n
// prompt ids, expiring an hour after now.
func SampleArtifact(tenant, id string, n int, now time.Time) *store.Artifact {
	a := &store.Artifact{
		Tenant:           tenant,
		ResponseID:       id,
		Fingerprint:      [32]byte{0: 0xfe, 31: 0x01},
		Mode:             store.ModeCanonical,
		PromptIDs:        make([]uint32, n),
		PromptTextLen:    4 * n,
		PromptTextDigest: store.TextDigest(id),
		GeneratedIDs:     []uint32{151644, 77091, 198, 9707, 151645},
		ItemBounds:       []store.ItemBound{{Start: 0, End: 2}, {Start: 3, End: 5}},
		ExpiresAt:        now.Add(time.Hour).Truncate(time.Second),
	}
	for i := range a.PromptIDs {
		a.PromptIDs[i] = uint32(i * 2654435761 % 151_936)
		if i%50 == 0 {
			a.Boundaries = append(a.Boundaries, store.Boundary{
				TextOffset: 4 * i, TokenIndex: i, PrefixDigest: store.TextDigest(fmt.Sprint(i)),
			})
		}
	}
	return a
}

// RunArtifacts checks an artifact store. newStore returns a fresh, empty
// store whose sealer and expiry use clock.
func RunArtifacts(t *testing.T, newStore func(t *testing.T, clock *Clock) Artifacts) {
	start := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		fn   func(t *testing.T, s Artifacts, clock *Clock)
	}{
		{"RoundTrip", testArtifactRoundTrip},
		{"Miss", testArtifactMiss},
		{"CrossTenant", testArtifactCrossTenant},
		{"Expired", testArtifactExpired},
		{"DefaultExpiry", testArtifactDefaultExpiry},
		{"Delete", testArtifactDelete},
		{"Replace", testArtifactReplace},
		{"Concurrent", testArtifactConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewClock(start)
			tt.fn(t, newStore(t, clock), clock)
		})
	}
}

func testArtifactRoundTrip(t *testing.T, s Artifacts, clock *Clock) {
	for _, n := range []int{0, 1, 1000, 20_000} {
		id := fmt.Sprintf("resp_%d", n)
		want := SampleArtifact("acme", id, n, clock.Now())
		if err := s.Put(t.Context(), want); err != nil {
			t.Fatalf("Put(%d ids) = %v", n, err)
		}
		got, tier, err := s.Get(t.Context(), "acme", id)
		if err != nil {
			t.Fatalf("Get(%d ids) = %v", n, err)
		}
		if tier == store.TierNone {
			t.Errorf("Get(%d ids) tier = %q", n, tier)
		}
		want.Version = store.ArtifactVersion
		if diff := cmpDiff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Get(%d ids) mismatch (-put +got):\n%.3000s", n, diff)
		}
	}
}

func testArtifactMiss(t *testing.T, s Artifacts, _ *Clock) {
	if _, tier, err := s.Get(t.Context(), "acme", "resp_none"); !errors.Is(err, store.ErrNotFound) || tier != store.TierNone {
		t.Errorf("Get(unknown) = %q, %v; want ErrNotFound", tier, err)
	}
}

func testArtifactCrossTenant(t *testing.T, s Artifacts, clock *Clock) {
	if err := s.Put(t.Context(), SampleArtifact("acme", "resp_1", 10, clock.Now())); err != nil {
		t.Fatal(err)
	}
	if a, _, err := s.Get(t.Context(), "evil", "resp_1"); err == nil {
		t.Errorf("Get(evil, acme's id) = %+v, want an error", a)
	} else if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Get(evil, acme's id) = %v, want ErrNotFound or ErrInvalid", err)
	}
}

func testArtifactExpired(t *testing.T, s Artifacts, clock *Clock) {
	if err := s.Put(t.Context(), SampleArtifact("acme", "resp_1", 10, clock.Now())); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if _, _, err := s.Get(t.Context(), "acme", "resp_1"); !errors.Is(err, store.ErrExpired) && !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(past expiry) = %v, want ErrExpired (or ErrNotFound once evicted)", err)
	}
}

func testArtifactDefaultExpiry(t *testing.T, s Artifacts, clock *Clock) {
	a := SampleArtifact("acme", "resp_1", 10, clock.Now())
	a.ExpiresAt = time.Time{}
	if err := s.Put(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if !a.ExpiresAt.IsZero() {
		t.Errorf("Put mutated the caller's ExpiresAt to %v", a.ExpiresAt)
	}
	got, _, err := s.Get(t.Context(), "acme", "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if !got.ExpiresAt.After(clock.Now()) {
		t.Errorf("default ExpiresAt = %v, want after %v", got.ExpiresAt, clock.Now())
	}
}

func testArtifactDelete(t *testing.T, s Artifacts, clock *Clock) {
	if err := s.Put(t.Context(), SampleArtifact("acme", "resp_1", 10, clock.Now())); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), "acme", "resp_1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(t.Context(), "acme", "resp_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(deleted) = %v, want ErrNotFound", err)
	}
	if err := s.Delete(t.Context(), "acme", "resp_1"); err != nil {
		t.Errorf("Delete(absent) = %v, want nil", err)
	}
}

func testArtifactReplace(t *testing.T, s Artifacts, clock *Clock) {
	a := SampleArtifact("acme", "resp_1", 10, clock.Now())
	if err := s.Put(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	b := SampleArtifact("acme", "resp_1", 20, clock.Now())
	b.Mode = store.ModeExact
	if err := s.Put(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Get(t.Context(), "acme", "resp_1")
	if err != nil || len(got.PromptIDs) != 20 || got.Mode != store.ModeExact {
		t.Errorf("Get after replace = %v; want the second artifact", err)
	}
}

func testArtifactConcurrent(t *testing.T, s Artifacts, clock *Clock) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				id := fmt.Sprintf("resp_%d_%d", w, i)
				if err := s.Put(t.Context(), SampleArtifact("acme", id, 100+i, clock.Now())); err != nil {
					errs <- err
					return
				}
				got, _, err := s.Get(t.Context(), "acme", id)
				if err != nil {
					errs <- err
					return
				}
				if got.ResponseID != id || len(got.PromptIDs) != 100+i {
					errs <- fmt.Errorf("Get(%q) returned %q with %d ids", id, got.ResponseID, len(got.PromptIDs))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
