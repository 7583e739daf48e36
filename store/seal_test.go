package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var testNow = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return testNow }

var (
	key1 = SealKey{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	key2 = SealKey{ID: "k2", Secret: []byte("fedcba9876543210fedcba9876543210")}
)

func mustSealer(t testing.TB, keys ...SealKey) *Sealer {
	t.Helper()
	s, err := NewSealer(keys, SealerOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testArtifact(n int) *Artifact {
	a := &Artifact{
		Tenant:           "acme",
		ResponseID:       "resp_0123456789abcdef",
		Fingerprint:      [32]byte{1, 2, 3, 4, 31: 0xff},
		Mode:             ModeExact,
		PromptIDs:        make([]uint32, n),
		PromptTextLen:    5 * n,
		PromptTextDigest: TextDigest("prompt"),
		GeneratedIDs:     []uint32{0, 127, 128, 16383, 16384, 2097151, 2097152, 1<<32 - 1},
		ItemBounds:       []ItemBound{{0, 3}, {3, 3}, {5, 8}},
		ExpiresAt:        testNow.Add(time.Hour),
	}
	for i := range a.PromptIDs {
		a.PromptIDs[i] = uint32(i * 40503 % 151_936)
		if i%40 == 0 || i == n-1 {
			a.Boundaries = append(a.Boundaries, Boundary{TextOffset: 5 * i, TokenIndex: i, PrefixDigest: TextDigest(fmt.Sprint(i))})
		}
	}
	return a
}

func TestArtifactRoundTrip(t *testing.T) {
	s := mustSealer(t, key1)
	tests := []struct {
		name string
		a    *Artifact
	}{
		{"empty", &Artifact{Tenant: "t", ResponseID: "r", ExpiresAt: testNow.Add(time.Second)}},
		{"small", testArtifact(10)},
		{"large", testArtifact(100_000)},
		{"canonical", func() *Artifact { a := testArtifact(3); a.Mode = ModeCanonical; return a }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sealed, err := s.SealArtifact(tt.a)
			if err != nil {
				t.Fatalf("SealArtifact = %v", err)
			}
			got, err := s.OpenArtifact(tt.a.Tenant, sealed)
			if err != nil {
				t.Fatalf("OpenArtifact = %v", err)
			}
			want := *tt.a
			want.Version = ArtifactVersion
			if reflect.DeepEqual(&want, got) {
				return // cmp.Diff on 100k ids takes seconds under -race
			}
			if diff := cmp.Diff(&want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%.3000s", diff)
			}
		})
	}
}

func TestSealArtifactRejects(t *testing.T) {
	s := mustSealer(t, key1)
	tests := []struct {
		name   string
		mutate func(a *Artifact)
	}{
		{"no expiry", func(a *Artifact) { a.ExpiresAt = time.Time{} }},
		{"bad tenant", func(a *Artifact) { a.Tenant = "a{b" }},
		{"no response id", func(a *Artifact) { a.ResponseID = "" }},
		{"boundary past prompt", func(a *Artifact) { a.Boundaries[1].TokenIndex = len(a.PromptIDs) + 1 }},
		{"boundary past text", func(a *Artifact) { a.Boundaries[1].TextOffset = a.PromptTextLen + 1 }},
		{"boundaries unordered", func(a *Artifact) { a.Boundaries[0], a.Boundaries[1] = a.Boundaries[1], a.Boundaries[0] }},
		{"item past generated", func(a *Artifact) { a.ItemBounds[2].End = len(a.GeneratedIDs) + 1 }},
		{"items overlap", func(a *Artifact) { a.ItemBounds[2].Start = 1 }},
		{"bad mode", func(a *Artifact) { a.Mode = 7 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := testArtifact(100)
			tt.mutate(a)
			if _, err := s.SealArtifact(a); err == nil {
				t.Errorf("SealArtifact accepted an artifact with %s", tt.name)
			}
		})
	}
}

func TestOpenArtifactFailures(t *testing.T) {
	s1 := mustSealer(t, key1)
	sealed, err := s1.SealArtifact(testArtifact(50))
	if err != nil {
		t.Fatal(err)
	}
	other, err := mustSealer(t, key2).SealArtifact(testArtifact(50))
	if err != nil {
		t.Fatal(err)
	}
	generic, err := s1.Seal("acme", "reseed", []byte("x"), testNow.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	later, err := NewSealer([]SealKey{key1}, SealerOptions{Now: func() time.Time { return testNow.Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		sealer *Sealer
		tenant string
		b      []byte
		want   error
	}{
		{"nil", s1, "acme", nil, ErrInvalid},
		{"truncated", s1, "acme", sealed[:len(sealed)-1], ErrInvalid},
		{"header only", s1, "acme", sealed[:20], ErrInvalid},
		{"appended", s1, "acme", append(bytes.Clone(sealed), 0), ErrInvalid},
		{"other tenant", s1, "evil", sealed, ErrInvalid},
		{"unknown key", s1, "acme", other, ErrInvalid},
		{"other purpose", s1, "acme", generic, ErrInvalid},
		{"expired", later, "acme", sealed, ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.sealer.OpenArtifact(tt.tenant, tt.b); !errors.Is(err, tt.want) {
				t.Errorf("OpenArtifact(%s) = %v, want %v", tt.name, err, tt.want)
			}
		})
	}
}

func TestOpenArtifactTamperEveryByte(t *testing.T) {
	s := mustSealer(t, key1)
	sealed, err := s.SealArtifact(testArtifact(20))
	if err != nil {
		t.Fatal(err)
	}
	for i := range sealed {
		for _, flip := range []byte{0x01, 0x80} {
			b := bytes.Clone(sealed)
			b[i] ^= flip
			if _, err := s.OpenArtifact("acme", b); !errors.Is(err, ErrInvalid) {
				t.Fatalf("flipping bit %#x of byte %d: OpenArtifact = %v, want ErrInvalid", flip, i, err)
			}
		}
	}
}

func TestKeyRotation(t *testing.T) {
	old := mustSealer(t, key1)
	rotated := mustSealer(t, key2, key1) // new key signs, old verifies
	newOnly := mustSealer(t, key2)
	a := testArtifact(10)

	byOld, err := old.SealArtifact(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rotated.OpenArtifact("acme", byOld); err != nil {
		t.Errorf("rotated sealer cannot open an old-key artifact: %v", err)
	}
	byRotated, err := rotated.SealArtifact(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newOnly.OpenArtifact("acme", byRotated); err != nil {
		t.Errorf("rotated sealer did not sign with the new key: %v", err)
	}
	if _, err := old.OpenArtifact("acme", byRotated); !errors.Is(err, ErrInvalid) {
		t.Errorf("old-only sealer opened a new-key artifact: %v", err)
	}
	if _, err := newOnly.OpenArtifact("acme", byOld); !errors.Is(err, ErrInvalid) {
		t.Errorf("after retiring the old key, its artifacts still open: %v", err)
	}
}

func TestNewSealerValidates(t *testing.T) {
	tests := []struct {
		name string
		keys []SealKey
	}{
		{"none", nil},
		{"empty id", []SealKey{{ID: "", Secret: key1.Secret}}},
		{"long id", []SealKey{{ID: string(make([]byte, 33)), Secret: key1.Secret}}},
		{"short secret", []SealKey{{ID: "k", Secret: []byte("short")}}},
		{"duplicate", []SealKey{key1, key1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewSealer(tt.keys, SealerOptions{}); err == nil {
				t.Errorf("NewSealer(%s) succeeded", tt.name)
			}
		})
	}
}

func TestSealOpen(t *testing.T) {
	s := mustSealer(t, key1, key2)
	payload := []byte(`{"ids":[1,2,3],"secret":"token ids"}`)
	for _, private := range []bool{false, true} {
		t.Run(fmt.Sprintf("private=%v", private), func(t *testing.T) {
			seal := s.Seal
			if private {
				seal = s.SealPrivate
			}
			sealed, err := seal("acme", "reseed", payload, testNow.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(sealed, []byte("token ids")); got == private {
				t.Errorf("payload visible in sealed value = %v, want %v", got, !private)
			}
			got, exp, err := s.Open("acme", "reseed", sealed)
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			if !bytes.Equal(got, payload) || !exp.Equal(testNow.Add(time.Minute)) {
				t.Errorf("Open = %q, %v; want %q, %v", got, exp, payload, testNow.Add(time.Minute))
			}
			got[0] = 'X' // the returned payload is the caller's
			if again, _, _ := s.Open("acme", "reseed", sealed); !bytes.Equal(again, payload) {
				t.Errorf("Open returned an aliased payload")
			}
			for _, tc := range []struct{ tenant, purpose string }{{"evil", "reseed"}, {"acme", "artifact"}, {"acme", "reseed2"}} {
				if _, _, err := s.Open(tc.tenant, tc.purpose, sealed); !errors.Is(err, ErrInvalid) {
					t.Errorf("Open(%q, %q) = %v, want ErrInvalid", tc.tenant, tc.purpose, err)
				}
			}
			for i := range sealed {
				b := bytes.Clone(sealed)
				b[i] ^= 0x20
				if _, _, err := s.Open("acme", "reseed", b); !errors.Is(err, ErrInvalid) {
					t.Fatalf("flipping byte %d: Open = %v, want ErrInvalid", i, err)
				}
			}
		})
	}
	never, err := s.Seal("acme", "p", nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got, exp, err := s.Open("acme", "p", never); err != nil || len(got) != 0 || !exp.IsZero() {
		t.Errorf("Open(no expiry, empty) = %q, %v, %v", got, exp, err)
	}
}

func TestSealKeyLogValueRedacts(t *testing.T) {
	if v := key1.LogValue().String(); bytes.Contains([]byte(v), key1.Secret) {
		t.Errorf("SealKey.LogValue leaks the secret: %s", v)
	}
}

// FuzzDecodeArtifact feeds arbitrary payloads to the artifact decoder (below
// the MAC, where a bug would matter once a key leaked or a version changed):
// it must never panic, errors must wrap ErrInvalid, and whatever decodes must
// re-encode to a payload that decodes to the same artifact.
func FuzzDecodeArtifact(f *testing.F) {
	for _, n := range []int{0, 1, 10, 300} {
		a := testArtifact(n)
		f.Add(appendLinkPayload(nil, a, linkOf(a)))
		f.Add(appendLinkPayload(nil, a, &link{base: "resp_base", baseLen: n + 7, reuseIDs: n / 2, reuseBounds: len(a.Boundaries) / 2}))
		f.Add(appendV1Payload(a))
	}
	f.Add([]byte{})
	f.Add([]byte{ArtifactVersion})
	f.Add([]byte{3, 0})
	f.Add(append([]byte{ArtifactVersion, 0}, make([]byte, 40)...))
	f.Add(append(append([]byte{ArtifactVersion, 0}, make([]byte, 34)...), 0xff, 0xff, 0xff, 0xff, 0x0f))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := decodeLinkPayload(b, idParts{})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("decode error %v does not wrap ErrInvalid", err)
			}
			return
		}
		// With a snapshot's first ids known (Tiered.rebase), they are stepped over and left in
		// ownKnown: the link reads the same (known being what the ids are).
		if l.base == "" && l.a.Version == ArtifactVersion {
			known := idParts{a: l.own[:len(l.own)/3], b: l.own[len(l.own)/3 : len(l.own)/2]}
			skipped, err := decodeLinkPayload(b, known)
			if err != nil {
				t.Fatalf("decodes in full but not with %d ids known: %v", known.len(), err)
			}
			own := append(append(append([]uint32(nil), skipped.ownKnown.a...), skipped.ownKnown.b...), skipped.own...)
			if skipped.ownKnown.len() != known.len() || !slices.Equal(own, l.own) {
				t.Fatalf("decode with %d ids known: %d known, ids differ", known.len(), skipped.ownKnown.len())
			}
			skipped.own, skipped.ownKnown = l.own, idParts{}
			if !reflect.DeepEqual(l, skipped) {
				t.Fatalf("decode with %d ids known differs:\n%+v\n%+v", known.len(), l, skipped)
			}
		}
		re := appendLinkPayload(nil, linkArtifact(l), l)
		l2, err := decodeLinkPayload(re, idParts{})
		if err != nil {
			t.Fatalf("re-encoded artifact does not decode: %v", err)
		}
		l2.a.Version = l.a.Version     // a version-1 payload re-encodes as version 2
		if !reflect.DeepEqual(l, l2) { // not cmp: fuzz inputs reach a million ids
			t.Fatalf("re-decode mismatch:\n%+v\n%+v", l, l2)
		}
	})
}

// linkArtifact is an artifact whose link l encodes: its own ids and boundaries
// after placeholders for the reused ones.
func linkArtifact(l *link) *Artifact {
	a := *l.a
	ids := append(make([]uint32, l.reuseIDs), l.own...)
	a.PromptIDs, a.GeneratedIDs = ids[:l.promptLen], ids[l.promptLen:]
	a.Boundaries = append(make([]Boundary, l.reuseBounds), l.ownBounds...)
	return &a
}

// appendV1Payload is the version-1 encoding of a, as earlier releases wrote it.
func appendV1Payload(a *Artifact) []byte {
	dst := []byte{artifactVersion1, byte(a.Mode)}
	dst = append(dst, a.Fingerprint[:]...)
	dst = appendString(dst, a.ResponseID)
	dst = binary.AppendUvarint(dst, uint64(a.PromptTextLen))
	dst = append(dst, a.PromptTextDigest[:]...)
	dst = appendIDs(dst, a.PromptIDs)
	dst = binary.AppendUvarint(dst, uint64(len(a.Boundaries)))
	prevOff, prevTok := 0, 0
	for _, b := range a.Boundaries {
		dst = binary.AppendUvarint(dst, uint64(b.TextOffset-prevOff))
		dst = binary.AppendUvarint(dst, uint64(b.TokenIndex-prevTok))
		dst = append(dst, b.PrefixDigest[:]...)
		prevOff, prevTok = b.TextOffset, b.TokenIndex
	}
	dst = appendIDs(dst, a.GeneratedIDs)
	dst = binary.AppendUvarint(dst, uint64(len(a.ItemBounds)))
	prevEnd := 0
	for _, ib := range a.ItemBounds {
		dst = binary.AppendUvarint(dst, uint64(ib.Start-prevEnd))
		dst = binary.AppendUvarint(dst, uint64(ib.End-ib.Start))
		prevEnd = ib.End
	}
	return dst
}

// TestOpenArtifactVersion1: an artifact sealed by an earlier release (version-1
// payload) still opens, as a full snapshot.
func TestOpenArtifactVersion1(t *testing.T) {
	s := mustSealer(t, key1)
	want := testArtifact(300)
	sealed, err := s.Seal(want.Tenant, artifactPurpose, appendV1Payload(want), want.ExpiresAt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.OpenArtifact(want.Tenant, sealed)
	if err != nil {
		t.Fatalf("open a version-1 artifact: %v", err)
	}
	want.Version = artifactVersion1
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("version-1 artifact (-want +got):\n%s", diff)
	}
}

// FuzzOpen feeds arbitrary sealed values to Open and OpenArtifact: no panic,
// and only typed errors.
func FuzzOpen(f *testing.F) {
	s := mustSealer(f, key1)
	sealed, _ := s.SealArtifact(testArtifact(5))
	f.Add(sealed)
	priv, _ := s.SealPrivate("acme", artifactPurpose, []byte("x"), testNow.Add(time.Hour))
	f.Add(priv)
	f.Add([]byte(sealMagic))
	f.Add([]byte("STCH\x01\x00\x02k1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := s.OpenArtifact("acme", b); err != nil && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrExpired) {
			t.Fatalf("OpenArtifact error %v is not typed", err)
		}
		if _, _, err := s.Open("acme", artifactPurpose, b); err != nil && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrExpired) {
			t.Fatalf("Open error %v is not typed", err)
		}
	})
}
