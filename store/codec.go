package store

import (
	"encoding/binary"
	"fmt"
)

// Artifact payload layout (version 2), inside a sealed envelope with purpose
// "artifact" (see Sealer). One entry is one link of a chain: the ids of the
// artifact are ids = PromptIDs ++ GeneratedIDs, of which the entry stores
// ids[reused:], the first reused coming from its base (another response's
// artifact of the same tenant); a full snapshot has no base and reuses none.
//
//	version (1 byte) | mode (1 byte) | fingerprint (32) |
//	response id (uvarint length + bytes) |
//	base id (uvarint length + bytes; empty for a full snapshot) |
//	with a base: base ids length, base prompt text digest (16),
//	  reused ids, reused boundaries (uvarints) |
//	prompt ids length (uvarint) |
//	prompt text length (uvarint) | prompt text digest (16) |
//	own ids: ids[reused:] (uvarint count, uvarint each) |
//	own boundaries: Boundaries[reused boundaries:] (uvarint count; each:
//	  offset delta, token delta from the previous own one, the first from 0
//	  (uvarints), digest (16)) |
//	item bounds (uvarint count; each: start - previous end, end - start (uvarints))
//
// The base ids length and digest bind the link to the very content it was cut
// from: a base replaced by something else (or a re-based copy of anything but
// the same ids) fails the check and the chain reads as invalid.
//
// Version 1 (earlier releases) is read as a full snapshot:
//
//	version | mode | fingerprint | response id | prompt text length |
//	prompt text digest | prompt ids | boundaries | generated ids | item bounds
//
// The tenant and expiry are not in the payload: the envelope binds them.

const minBoundarySize = 1 + 1 + len(Digest16{})

// link is one decoded entry of an artifact chain.
type link struct {
	// a holds the artifact's own fields: tenant, response id, fingerprint,
	// mode, prompt text length and digest, item bounds, expiry. Its
	// PromptIDs, GeneratedIDs and Boundaries are filled by reconstruct.
	a *Artifact
	// base is the response id of the artifact this one extends ("" for a
	// full snapshot), baseLen and baseDigest what that artifact's ids length
	// and PromptTextDigest must be.
	base       string
	baseLen    int
	baseDigest Digest16
	// reuseIDs and reuseBounds count the ids and boundaries taken from the
	// base's.
	reuseIDs, reuseBounds int
	promptLen             int
	own                   []uint32
	ownBounds             []Boundary
	// ownKnown, for a snapshot decoded with its first ids known (decodeLinkPayload), are those
	// ids, which precede own: the caller's slices, not copied.
	ownKnown idParts
	// size is the sealed entry's length in bytes.
	size int
}

// linkOf is the link storing a in full (a snapshot), without copying ids.
func linkOf(a *Artifact) *link {
	return &link{a: a, promptLen: len(a.PromptIDs), ownBounds: a.Boundaries}
}

// appendLinkPayload appends the version-2 payload of a stored as l (l's base
// fields and reuse counts; a's ids and boundaries past them) to dst.
func appendLinkPayload(dst []byte, a *Artifact, l *link) []byte {
	dst = append(dst, ArtifactVersion, byte(a.Mode))
	dst = append(dst, a.Fingerprint[:]...)
	dst = appendString(dst, a.ResponseID)
	dst = appendString(dst, l.base)
	if l.base != "" {
		dst = binary.AppendUvarint(dst, uint64(l.baseLen))
		dst = append(dst, l.baseDigest[:]...)
		dst = binary.AppendUvarint(dst, uint64(l.reuseIDs))
		dst = binary.AppendUvarint(dst, uint64(l.reuseBounds))
	}
	dst = binary.AppendUvarint(dst, uint64(len(a.PromptIDs)))
	dst = binary.AppendUvarint(dst, uint64(a.PromptTextLen))
	dst = append(dst, a.PromptTextDigest[:]...)
	// ids[reuseIDs:] of ids = PromptIDs ++ GeneratedIDs.
	p, g := a.PromptIDs, a.GeneratedIDs
	if l.reuseIDs <= len(p) {
		p = p[l.reuseIDs:]
	} else {
		p, g = nil, g[l.reuseIDs-len(p):]
	}
	dst = binary.AppendUvarint(dst, uint64(len(p)+len(g)))
	dst = appendIDValues(appendIDValues(dst, p), g)
	own := a.Boundaries[l.reuseBounds:]
	dst = binary.AppendUvarint(dst, uint64(len(own)))
	prevOff, prevTok := 0, 0
	for _, b := range own {
		dst = binary.AppendUvarint(dst, uint64(b.TextOffset-prevOff))
		dst = binary.AppendUvarint(dst, uint64(b.TokenIndex-prevTok))
		dst = append(dst, b.PrefixDigest[:]...)
		prevOff, prevTok = b.TextOffset, b.TokenIndex
	}
	dst = binary.AppendUvarint(dst, uint64(len(a.ItemBounds)))
	prevEnd := 0
	for _, ib := range a.ItemBounds {
		dst = binary.AppendUvarint(dst, uint64(ib.Start-prevEnd))
		dst = binary.AppendUvarint(dst, uint64(ib.End-ib.Start))
		prevEnd = ib.End
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// linkSizeHint estimates the payload size of a stored as l, to allocate once.
func linkSizeHint(a *Artifact, l *link) int {
	ids := len(a.PromptIDs) + len(a.GeneratedIDs) - l.reuseIDs
	return 96 + len(a.ResponseID) + len(l.base) + 3*ids +
		(minBoundarySize+4)*(len(a.Boundaries)-l.reuseBounds) + 6*len(a.ItemBounds)
}

// decodeLinkPayload parses a version-2 or version-1 payload. Any malformed
// input yields an error wrapping ErrInvalid; it never panics and allocates at
// most a small multiple of len(b). The link's own parts are checked here; the
// reassembled artifact is checked by reconstruct. A version-2 snapshot's first
// ids, up to known.len(), are not decoded but left in ownKnown as known's own
// slices (decoder.idsAfter): the caller knows them already (Tiered.rebase).
func decodeLinkPayload(b []byte, known idParts) (*link, error) {
	if len(b) > 0 && b[0] == artifactVersion1 {
		a, err := decodeArtifactV1(b)
		if err != nil {
			return nil, err
		}
		l := linkOf(a)
		l.own = append(append(make([]uint32, 0, len(a.PromptIDs)+len(a.GeneratedIDs)), a.PromptIDs...), a.GeneratedIDs...)
		a.PromptIDs, a.GeneratedIDs, a.Boundaries = nil, nil, nil // reconstruct fills them
		return l, nil
	}
	d := &decoder{b: b}
	a := &Artifact{}
	l := &link{a: a}
	if v := d.byte("version"); d.err == nil && v != ArtifactVersion {
		return nil, fmt.Errorf("decode artifact: version %d, want %d or %d: %w", v, ArtifactVersion, artifactVersion1, ErrInvalid)
	}
	a.Version = ArtifactVersion
	a.Mode = Mode(d.byte("mode"))
	copy(a.Fingerprint[:], d.bytes("fingerprint", len(a.Fingerprint)))
	a.ResponseID = d.string("response id", MaxIDLen)
	l.base = d.string("base id", MaxIDLen)
	if l.base != "" {
		l.baseLen = d.int("base length")
		copy(l.baseDigest[:], d.bytes("base digest", len(l.baseDigest)))
		l.reuseIDs = d.int("reused ids")
		l.reuseBounds = d.int("reused boundaries")
		if l.reuseIDs > l.baseLen {
			d.fail("reused ids past the base")
		}
	}
	l.promptLen = d.int("prompt length")
	a.PromptTextLen = d.int("prompt text length")
	copy(a.PromptTextDigest[:], d.bytes("prompt text digest", len(a.PromptTextDigest)))
	if l.base == "" {
		l.ownKnown, l.own = d.idsAfter("own ids", known)
	} else {
		l.own = d.ids("own ids")
	}
	total := l.reuseIDs + l.ownKnown.len() + len(l.own)
	if l.promptLen > total {
		d.fail("prompt length")
	}
	if n := d.count("boundaries", minBoundarySize); n > 0 {
		l.ownBounds = make([]Boundary, n)
		off, tok := 0, 0
		for i := range l.ownBounds {
			off += d.int("boundary offset")
			tok += d.int("boundary token")
			l.ownBounds[i] = Boundary{TextOffset: off, TokenIndex: tok}
			copy(l.ownBounds[i].PrefixDigest[:], d.bytes("boundary digest", len(Digest16{})))
			if off > a.PromptTextLen || tok > l.promptLen {
				d.fail("boundary range") // also keeps the running sums from overflowing
			}
			if d.err != nil {
				break
			}
		}
	}
	if n := d.count("item bounds", 2); n > 0 {
		a.ItemBounds = make([]ItemBound, n)
		end := 0
		for i := range a.ItemBounds {
			start := end + d.int("item start")
			end = start + d.int("item length")
			a.ItemBounds[i] = ItemBound{Start: start, End: end}
			if end > total-l.promptLen {
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
	if l.base == "" && l.reuseIDs+l.reuseBounds != 0 {
		return nil, fmt.Errorf("decode artifact: a snapshot reuses ids: %w", ErrInvalid)
	}
	return l, nil
}

// decodeArtifactV1 parses a version-1 payload (one full artifact).
func decodeArtifactV1(b []byte) (*Artifact, error) {
	d := &decoder{b: b}
	a := &Artifact{}
	d.byte("version")
	a.Version = artifactVersion1
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
				d.fail("boundary range")
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

// SealArtifact validates a and returns its sealed encoding as a full snapshot,
// bound to a.Tenant and a.ExpiresAt (which must be set: artifacts always
// expire). a.Version and a.Chain are ignored. The result is owned by the
// caller.
func (s *Sealer) SealArtifact(a *Artifact) ([]byte, error) {
	return s.sealLink(a, linkOf(a))
}

// sealLink seals a stored as l (l.base empty: in full).
func (s *Sealer) sealLink(a *Artifact, l *link) ([]byte, error) {
	if !validTenant(a.Tenant) || !validID(a.ResponseID) || (l.base != "" && !validID(l.base)) {
		return nil, fmt.Errorf("seal artifact %q: %w", truncate(a.ResponseID), ErrInvalidKey)
	}
	if a.ExpiresAt.IsZero() {
		return nil, fmt.Errorf("seal artifact %q: zero ExpiresAt", a.ResponseID)
	}
	if err := a.validate(); err != nil {
		return nil, fmt.Errorf("seal artifact %q: %w", a.ResponseID, err)
	}
	if l.reuseIDs > len(a.PromptIDs)+len(a.GeneratedIDs) || l.reuseBounds > len(a.Boundaries) || l.reuseIDs > l.baseLen {
		return nil, fmt.Errorf("seal artifact %q: reuse past the artifact or its base", a.ResponseID)
	}
	return s.sealAppend(a.Tenant, artifactPurpose, a.ExpiresAt, false, linkSizeHint(a, l), func(dst []byte) []byte {
		return appendLinkPayload(dst, a, l)
	})
}

// OpenArtifact verifies and decodes a sealed full artifact for tenant. Errors
// wrap ErrInvalid (malformed, tampered, unknown key, other tenant, or a link
// of a chain, which only Tiered can resolve) or ErrExpired. The artifact
// returned is fresh and owned by the caller. Callers must still compare
// ResponseID and Fingerprint with what they expect.
func (s *Sealer) OpenArtifact(tenant string, sealed []byte) (*Artifact, error) {
	l, err := s.openLink(tenant, sealed, idParts{}, true)
	if err != nil {
		return nil, err
	}
	if l.base != "" {
		return nil, fmt.Errorf("open artifact: a link extending %q, not a full artifact: %w", truncate(l.base), ErrInvalid)
	}
	return reconstruct([]*link{l})
}

// openLink verifies and decodes one sealed entry for tenant (a snapshot's
// first ids from known, see decodeLinkPayload); its MAC is left unchecked
// without checkMAC (Sealer.openChecked).
func (s *Sealer) openLink(tenant string, sealed []byte, known idParts, checkMAC bool) (*link, error) {
	payload, exp, err := s.openChecked(tenant, artifactPurpose, sealed, checkMAC)
	if err != nil {
		return nil, err
	}
	if exp.IsZero() {
		return nil, fmt.Errorf("open artifact: no expiry: %w", ErrInvalid)
	}
	l, err := decodeLinkPayload(payload, known)
	if err != nil {
		return nil, err
	}
	l.a.Tenant = tenant
	l.a.ExpiresAt = exp
	l.size = len(sealed)
	return l, nil
}
