package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with errors.Is; every error returned by this
// package wraps at most one of them plus the operation and key that failed.
var (
	// ErrNotFound reports that no record exists for the tenant and id: it was
	// never stored, it expired, it was deleted, or it belongs to another tenant
	// (the cases are deliberately indistinguishable). Checkpoint callers answer
	// 404 / "previous response not found"; artifact callers treat it as a miss
	// and do a full render.
	ErrNotFound = errors.New("store: not found")

	// ErrInvalid reports a sealed value that failed verification: truncated,
	// corrupted, tampered, signed by an unknown key, or bound to another tenant
	// or purpose. Never retry it; treat the artifact as absent (full render) and
	// count the "invalid" outcome.
	ErrInvalid = errors.New("store: invalid sealed value")

	// ErrExpired reports a sealed value whose MAC is good but whose expiry has
	// passed. Treat it like a miss (full render) and count the "expired" outcome.
	ErrExpired = errors.New("store: sealed value expired")

	// ErrUnavailable reports that a backend (Redis, the bolt file) could not be
	// reached or answered with a server-side error. For artifacts, fall back to a
	// full render; for checkpoints, fail the request with a 5xx (503) and retry
	// later. The backend error is wrapped alongside it.
	ErrUnavailable = errors.New("store: backend unavailable")

	// ErrInvalidKey reports a malformed tenant or id (empty, too long, or
	// containing a byte reserved by the key layout). It is a caller bug or
	// hostile input; do not retry. Reads never return it: a malformed id simply
	// reads as ErrNotFound.
	ErrInvalidKey = errors.New("store: malformed tenant or id")

	// ErrClosed reports use of a store after Close. A shutdown-ordering bug.
	ErrClosed = errors.New("store: closed")

	// ErrDeleted reports a response that was deleted and whose tombstone is
	// still kept (at least as long as the response would have lived). It
	// wraps ErrNotFound, so a caller answering 404 needs nothing more; the
	// Fallback uses it to tell "deleted" (never serve the local copy, never
	// replay it) from "forgotten" (Redis lost its data: re-publish it).
	// PutResponse of a deleted id fails with it: a delete is never undone.
	ErrDeleted = fmt.Errorf("%w (deleted)", ErrNotFound)

	// ErrCorrupt reports a stored record or item that failed to decode or
	// verify: garbage or a foreign value in Redis, a MAC mismatch, a damaged
	// file, an item whose bytes are not valid JSON. Every error wrapping it
	// also wraps ErrNotFound: such a record is answered as absent (404, or
	// previous_response_not_found), never as a 500, and never emitted. Stores
	// count these reads (CheckpointStats.Corrupt) so an operator sees them.
	ErrCorrupt = errors.New("store: corrupt stored record")
)

// corrupt wraps cause as a read of a corrupt record: ErrCorrupt and
// ErrNotFound, with the cause as text only (it may wrap ErrInvalid, which
// callers must not mistake for a sealed artifact's rejection).
func corrupt(op string, cause error) error {
	return fmt.Errorf("%s: %w: %w: %v", op, ErrCorrupt, ErrNotFound, cause)
}
