package store

import (
	"encoding/binary"
	"fmt"
)

// Artifact payload layout (version 1), inside a sealed envelope with purpose
// "artifact" (see Sealer):
//
//	version (1 byte) | mode (1 byte) | fingerprint (32) |
//	response id (uvarint length + bytes) |
//	prompt text length (uvarint) | prompt text digest (16) |
//	prompt ids (uvarint count, uvarint each) |
//	boundaries (uvarint count; each: offset delta, token delta (uvarints), digest (16)) |
//	generated ids (as prompt ids) |
//	item bounds (uvarint count; each: start - previous end, end - start (uvarints))
//
// The tenant and expiry are not in the payload: the envelope binds them.

const minBoundarySize = 1 + 1 + len(Digest16{})

// appendArtifactPayload appends the version-1 payload of a to dst.
func appendArtifactPayload(dst []byte, a *Artifact) []byte {
	dst = append(dst, ArtifactVersion, byte(a.Mode))
	dst = append(dst, a.Fingerprint[:]...)
	dst = binary.AppendUvarint(dst, uint64(len(a.ResponseID)))
	dst = append(dst, a.ResponseID...)
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

// payloadSizeHint estimates the payload size to allocate once.
func payloadSizeHint(a *Artifact) int {
	return 64 + len(a.ResponseID) + 3*(len(a.PromptIDs)+len(a.GeneratedIDs)) +
		(minBoundarySize+4)*len(a.Boundaries) + 6*len(a.ItemBounds)
}

// decodeArtifactPayload parses a version-1 payload. Any malformed input
// yields an error wrapping ErrInvalid; it never panics and allocates at most
// a small multiple of len(b).
func decodeArtifactPayload(b []byte) (*Artifact, error) {
	d := &decoder{b: b}
	a := &Artifact{}
	if v := d.byte("version"); d.err == nil && v != ArtifactVersion {
		return nil, fmt.Errorf("decode artifact: version %d, want %d: %w", v, ArtifactVersion, ErrInvalid)
	}
	a.Version = ArtifactVersion
	a.Mode = Mode(d.byte("mode"))
	copy(a.Fingerprint[:], d.bytes("fingerprint", len(a.Fingerprint)))
	a.ResponseID = d.string("response id", MaxIDLen)
	a.PromptTextLen = d.int("prompt text length")
	copy(a.PromptTextDigest[:], d.bytes("prompt text digest", len(a.PromptTextDigest)))
	a.PromptIDs = d.ids("prompt ids")
	if n := d.count("boundaries", minBoundarySize); n > 0 {
		a.Boundaries = make([]Boundary, n)
		off, tok := 0, 0
		for i := range a.Boundaries {
			off += d.int("boundary offset")
			tok += d.int("boundary token")
			a.Boundaries[i] = Boundary{TextOffset: off, TokenIndex: tok}
			copy(a.Boundaries[i].PrefixDigest[:], d.bytes("boundary digest", len(Digest16{})))
			if off > a.PromptTextLen || tok > len(a.PromptIDs) {
				d.fail("boundary range") // also keeps the running sums from overflowing
			}
			if d.err != nil {
				break
			}
		}
	}
	a.GeneratedIDs = d.ids("generated ids")
	if n := d.count("item bounds", 2); n > 0 {
		a.ItemBounds = make([]ItemBound, n)
		end := 0
		for i := range a.ItemBounds {
			start := end + d.int("item start")
			end = start + d.int("item length")
			a.ItemBounds[i] = ItemBound{Start: start, End: end}
			if end > len(a.GeneratedIDs) {
				d.fail("item bound range")
			}
			if d.err != nil {
				break
			}
		}
	}
	d.done("artifact")
	if d.err != nil {
		return nil, fmt.Errorf("decode artifact: %w", d.err)
	}
	if err := a.validate(); err != nil {
		return nil, fmt.Errorf("decode artifact: %v: %w", err, ErrInvalid)
	}
	return a, nil
}

// SealArtifact validates a and returns its sealed encoding, bound to a.Tenant
// and a.ExpiresAt (which must be set: artifacts always expire). a.Version is
// ignored. The result is owned by the caller.
func (s *Sealer) SealArtifact(a *Artifact) ([]byte, error) {
	if !validTenant(a.Tenant) || !validID(a.ResponseID) {
		return nil, fmt.Errorf("seal artifact %q: %w", truncate(a.ResponseID), ErrInvalidKey)
	}
	if a.ExpiresAt.IsZero() {
		return nil, fmt.Errorf("seal artifact %q: zero ExpiresAt", a.ResponseID)
	}
	if err := a.validate(); err != nil {
		return nil, fmt.Errorf("seal artifact %q: %w", a.ResponseID, err)
	}
	return s.sealAppend(a.Tenant, artifactPurpose, a.ExpiresAt, false, payloadSizeHint(a), func(dst []byte) []byte {
		return appendArtifactPayload(dst, a)
	})
}

// OpenArtifact verifies and decodes a sealed artifact for tenant. Errors wrap
// ErrInvalid (malformed, tampered, unknown key, other tenant) or ErrExpired.
// The artifact returned is fresh and owned by the caller. Callers must still
// compare ResponseID and Fingerprint with what they expect.
func (s *Sealer) OpenArtifact(tenant string, sealed []byte) (*Artifact, error) {
	payload, exp, err := s.open(tenant, artifactPurpose, sealed)
	if err != nil {
		return nil, err
	}
	if exp.IsZero() {
		return nil, fmt.Errorf("open artifact: no expiry: %w", ErrInvalid)
	}
	a, err := decodeArtifactPayload(payload)
	if err != nil {
		return nil, err
	}
	a.Tenant = tenant
	a.ExpiresAt = exp
	return a, nil
}
