package store

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/stitchllm/stitch/internal/continuation"
)

// ArtifactVersion is the version byte of the artifact encoding written by this
// package. Version 2 stores a turn as a link: what it added plus a reference to
// the artifact it extends (docs/design.md "Storage tiers"). Decoding also reads
// version 1 (one full artifact per entry, as earlier releases wrote them) as a
// full snapshot; any other version reads as ErrInvalid, which only costs one
// full render.
const ArtifactVersion = 2

// artifactVersion1 is the earlier encoding: every entry a full artifact.
const artifactVersion1 = 1

// artifactPurpose binds sealed artifacts so no other sealed blob (for example
// a reseed payload) can be replayed as an artifact.
const artifactPurpose = "artifact"

// Mode is the continuation mode an artifact was built for.
type Mode = continuation.Mode

const (
	// ModeCanonical: the prompt is exactly a full render of the conversation;
	// the artifact only saves tokenization work (certified suffix).
	ModeCanonical = continuation.Canonical
	// ModeExact: the history is frozen as prompt ids plus generated ids.
	ModeExact = continuation.Exact
)

// ParseMode reads a continuation mode ("canonical" or "exact"); see continuation.Parse.
func ParseMode(s string) (Mode, error) { return continuation.Parse(s) }

// Digest16 is a truncated SHA-256 used for prompt-text prefixes. 128 bits are
// plenty: the digest only certifies that a prefix is unchanged between two
// renders of the same tenant's conversation, and the artifact itself is MAC'd.
type Digest16 [16]byte

// TextDigest returns the Digest16 of s: the first 16 bytes of SHA-256(s).
func TextDigest(s string) Digest16 {
	sum := sha256.Sum256([]byte(s))
	return Digest16(sum[:16])
}

// Boundary is one entry of the certified-suffix table: a split point of the
// prompt text P at the start or end of an added-token match, where
// tokenize(P) == tokenize(P[:TextOffset]) ++ tokenize(P[TextOffset:]).
type Boundary struct {
	// TextOffset is a byte offset into the prompt text P.
	TextOffset int
	// TokenIndex is the number of prompt ids that encode P[:TextOffset].
	TokenIndex int
	// PrefixDigest is TextDigest(P[:TextOffset]) (render computes a table's
	// digests in one pass). The store itself treats it as opaque bytes.
	PrefixDigest Digest16
}

// ItemBound locates one output item inside GeneratedIDs: ids[Start:End].
type ItemBound struct {
	Start, End int
}

// Artifact caches the exact token ids of one stored response for one tenant
// and model fingerprint. It is never the source of truth: losing it costs one
// full render, never a different model-visible token.
//
// Slices are owned by the Artifact; stores copy on the way in (encoding) and
// hand out fresh slices on the way out (decoding), so callers may keep and
// mutate what they receive.
type Artifact struct {
	// Version is the encoding version; set on decode, ignored on encode.
	Version int
	// Tenant the artifact belongs to; bound by the MAC.
	Tenant string
	// ResponseID is the checkpoint id (resp_…) whose prompt and output these
	// ids are.
	ResponseID string
	// Fingerprint is the model execution identity (docs/design.md "Identities"); consumers
	// use the artifact only if it equals the new request's fingerprint.
	Fingerprint [32]byte
	// Mode is the continuation mode the ids were produced for.
	Mode Mode
	// PromptIDs are the prompt ids K sent to vLLM for this response.
	PromptIDs []uint32
	// PromptTextLen is len(P) in bytes, P being the rendered prompt text.
	PromptTextLen int
	// PromptTextDigest is TextDigest(P) (or the producer's equivalent).
	PromptTextDigest Digest16
	// Boundaries is the certified-suffix table, ordered by TextOffset and
	// TokenIndex (both non-decreasing), with TextOffset <= PromptTextLen and
	// TokenIndex <= len(PromptIDs).
	Boundaries []Boundary
	// GeneratedIDs are the ids the model generated, verbatim.
	GeneratedIDs []uint32
	// ItemBounds locate each output item in GeneratedIDs, in output order,
	// non-overlapping and within range.
	ItemBounds []ItemBound
	// ExpiresAt is when the artifact stops being valid; bound by the MAC.
	// Stored with one-second resolution. For an artifact read from a chain of
	// links it is the earliest expiry along the chain.
	ExpiresAt time.Time
	// Chain is set by Tiered.Get and Tiered.PutChild: the response ids of the
	// stored links this artifact extends, nearest first (empty for a full
	// snapshot). It is a hint for the next PutChild (chain length, which links
	// to re-base at a snapshot); the encoding ignores it and nothing read
	// through it is trusted without its own MAC.
	Chain []string
	// SharedIDs is a producer's hint to PutChild: how many leading ids (of
	// PromptIDs ++ GeneratedIDs) it copied from the parent's (a continuation's
	// reused prefix), which PutChild then does not compare again (a long
	// conversation's prompt ids, when they do not share the parent's array).
	// Zero compares every id. It is spot-checked, never stored nor read back.
	SharedIDs int
}

// validate checks the structural invariants documented on Artifact. Encoding
// refuses to seal an artifact that breaks them and decoding reports ErrInvalid,
// so consumers can index PromptIDs[:b.TokenIndex] without further checks.
func (a *Artifact) validate() error {
	if a.Mode > ModeExact {
		return fmt.Errorf("mode %d", a.Mode)
	}
	if a.PromptTextLen < 0 {
		return fmt.Errorf("prompt text length %d", a.PromptTextLen)
	}
	prevOff, prevTok := 0, 0
	for i, b := range a.Boundaries {
		if b.TextOffset < prevOff || b.TokenIndex < prevTok || b.TextOffset > a.PromptTextLen || b.TokenIndex > len(a.PromptIDs) {
			return fmt.Errorf("boundary %d (%d, %d) out of order or range", i, b.TextOffset, b.TokenIndex)
		}
		prevOff, prevTok = b.TextOffset, b.TokenIndex
	}
	prevEnd := 0
	for i, ib := range a.ItemBounds {
		if ib.Start < prevEnd || ib.End < ib.Start || ib.End > len(a.GeneratedIDs) {
			return fmt.Errorf("item bound %d [%d, %d) out of order or range", i, ib.Start, ib.End)
		}
		prevEnd = ib.End
	}
	return nil
}
