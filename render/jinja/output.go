package jinja

import (
	"strings"
	"sync"
	"unsafe"
	"weak"
)

// A continuation's output repeats the output it replays from for most of its length (the whole
// history of a conversation). ExecuteMemo writes it into the same memory (issue 20): an
// execution's text lives in a textArena, an append-only buffer whose written bytes are never
// changed again, and the next execution replaying from it starts out sharing the arena. While
// its output equals the bytes already there it only advances (a replayed iteration written at
// its old offset is equal by construction and not even compared); once it reaches the end of
// what was written it claims the rest of the buffer and writes in place. When it writes
// something else than what is there (a branch of the conversation, an edited message, or the
// previous turn's generation prompt replaced by a longer assistant turn) or the buffer is full,
// it copies what it has to a buffer of its own (copy on branch), which becomes the arena of the
// next turn. Every string handed out is a prefix of an arena's written bytes, so it never
// changes.
//
// A copy's first bytes are the arena's, which never change: the arena remembers its last copy
// (the finished output that left it, and how many of its bytes that output took along), and an
// output that leaves the arena within them continues on the copy instead of copying again, while
// it writes what the copy holds (the same turn prepared again: a retry, a re-preparation whose
// template rewrote the same earlier message). It compares only the bytes after the point it
// left, as it would compare them with the arena's.

// textArena is the backing buffer of a chain of outputs, each a prefix of the ones after it.
type textArena struct {
	mu      sync.Mutex
	buf     []byte // len == cap
	used    int    // buf[:used] is written and never changes
	claimed bool   // an execution is writing at buf[used:]
	// copied is the arena of the last finished output that left this one after copying
	// buf[:copiedLen] (its first bytes); weak, so that it does not keep a copy nobody uses alive.
	copied    weak.Pointer[textArena]
	copiedLen int
}

// arenaRoom caps the spare room, in bytes, of an output copied to a buffer of its own (for the
// turns after it), except that a long one gets a quarter of its length.
const arenaRoom = 64 << 10

// arenaSpare is the room given to an output of n bytes: half its length for a short one (a
// conversation's next turn is often as long as its history so far), at most arenaRoom, and a
// quarter for a long one, so that the memory kept beside a text stays a fraction of it while a
// copy comes every few turns (an agent turn adds ~4k tokens: at 100k tokens, about every sixth
// turn; with an eighth, every third turn copied ~400 KB, issue 20).
func arenaSpare(n int) int { return max(n/4, min(arenaRoom, n/2)) }

type outMode uint8

const (
	outPrivate outMode = iota // the bytes are sb's
	outShared                 // the output is buf[:n], written before (n <= end)
	outOwner                  // buf[start of the claim:n] is being written by this output
)

// output is where an execution writes: a strings.Builder of its own, or a textArena's buffer
// (ExecuteMemo's main output).
type output struct {
	mode outMode
	sb   strings.Builder
	a    *textArena
	buf  []byte // a.buf
	n    int    // shared and owner modes: the output is buf[:n]
	end  int    // shared mode: a.used when last looked at
	// base is the arena the output started on (the previous execution's); baseShared, once
	// the output left it (private, or on a copy of it), is how much of it was base's bytes.
	base       *textArena
	baseShared int
	// left is the arena the output copied its first leftLen bytes from when it went private,
	// which finish tells about the copy.
	left    *textArena
	leftLen int
}

// shared returns the arena the output started on and the length of the output's prefix that
// is that arena's bytes (0, nil for an output that started private).
func (o *output) shared() (*textArena, int) {
	if o.mode != outPrivate && o.a == o.base {
		return o.base, o.n
	}
	return o.base, o.baseShared
}

// newSharedOutput returns an output that starts out sharing a, whose written bytes begin with
// the previous execution's text.
func newSharedOutput(a *textArena) *output {
	a.mu.Lock()
	end := a.used
	a.mu.Unlock()
	return &output{mode: outShared, a: a, buf: a.buf, end: end, base: a}
}

// Len returns the number of bytes written.
func (o *output) Len() int {
	if o.mode == outPrivate {
		return o.sb.Len()
	}
	return o.n
}

// String returns the output so far; the bytes never change.
func (o *output) String() string {
	if o.mode == outPrivate {
		return o.sb.String()
	}
	return unsafe.String(unsafe.SliceData(o.buf), o.n)
}

// Grow reserves room in a private output.
func (o *output) Grow(n int) {
	if o.mode == outPrivate {
		o.sb.Grow(n)
	}
}

// WriteString appends s.
func (o *output) WriteString(s string) {
	switch o.mode {
	case outPrivate:
		o.sb.WriteString(s)
	case outOwner:
		if o.n+len(s) <= len(o.buf) {
			o.n += copy(o.buf[o.n:], s)
			return
		}
		o.leave(s)
	case outShared:
		o.writeShared(s)
	}
}

// writeKnown appends s, which the caller knows equals the base arena's bytes at the output's
// offset when the output is still sharing it (a replayed iteration at its old offset, within the
// previous text: see memoState.replayLCP).
func (o *output) writeKnown(s string) {
	if o.mode == outShared && o.a == o.base && o.n+len(s) <= o.end {
		o.n += len(s)
		return
	}
	o.WriteString(s)
}

func (o *output) writeShared(s string) {
	for len(s) > 0 {
		if o.n < o.end {
			k := min(len(s), o.end-o.n)
			if unsafe.String(&o.buf[o.n], k) != s[:k] {
				o.leave(s)
				return
			}
			o.n += k
			s = s[k:]
			continue
		}
		if o.claim() {
			o.WriteString(s)
			return
		}
		if o.n < o.end {
			continue // more was written since: compare with it
		}
		o.leave(s)
		return
	}
}

// leave writes s, which the output's arena cannot take at its offset (its bytes there differ,
// or it is full or claimed): on the arena's last copy when that holds the output so far (see
// the top of the file), else in a buffer of the output's own.
func (o *output) leave(s string) {
	if c := o.copyHolding(); c != nil {
		o.release(false)
		if o.a == o.base {
			o.baseShared = o.n
		}
		c.mu.Lock()
		o.end = c.used
		c.mu.Unlock()
		o.mode, o.a, o.buf = outShared, c, c.buf
		o.writeShared(s)
		return
	}
	o.toPrivate(len(s))
	o.sb.WriteString(s)
}

// copyHolding returns the arena of the last copy of the output's arena when it holds the output
// so far: it copied the arena's written bytes up to the output's offset, or up to the start of
// the output's claim, followed by the bytes the output wrote there since (compared: a claim's
// bytes are the output's own, unpublished). Nil otherwise.
func (o *output) copyHolding() *textArena {
	a := o.a
	a.mu.Lock()
	written := min(o.n, a.used) // a's bytes, which never change
	c := a.copied.Value()
	if o.n == 0 || written > a.copiedLen {
		c = nil
	}
	a.mu.Unlock()
	if c == nil || c == a {
		return nil
	}
	c.mu.Lock()
	used := c.used
	c.mu.Unlock()
	if o.n > used || string(c.buf[written:o.n]) != string(o.buf[written:o.n]) {
		return nil
	}
	return c
}

// claim makes the output the writer at the arena's end when it is there and nobody else is.
func (o *output) claim() bool {
	a := o.a
	a.mu.Lock()
	defer a.mu.Unlock()
	o.end = a.used
	if a.claimed || a.used != o.n || o.n == len(o.buf) || o.n%claimAlign != 0 {
		return false
	}
	a.claimed = true
	o.mode = outOwner
	return true
}

// toPrivate copies the output to a builder of its own, with room for extra more bytes and the
// turns after this one, and gives up a claim.
func (o *output) toPrivate(extra int) {
	o.release(false)
	shared := unsafe.String(unsafe.SliceData(o.buf), o.n)
	if o.a == o.base {
		o.baseShared = o.n
	}
	// Only the arena's written bytes never change: a claim's unpublished bytes may be written
	// over by the next claim, so a copy is known to hold the arena's first bytes only up to used.
	o.a.mu.Lock()
	o.left, o.leftLen = o.a, min(o.n, o.a.used)
	o.a.mu.Unlock()
	o.mode, o.a, o.buf = outPrivate, nil, nil
	o.sb.Grow(o.n + extra + arenaSpare(o.n+extra))
	o.sb.WriteString(shared)
}

// release gives up a claim; publish makes the bytes written part of the arena.
func (o *output) release(publish bool) {
	if o.mode != outOwner {
		return
	}
	o.a.mu.Lock()
	if publish {
		o.a.used = o.n
	}
	o.a.claimed = false
	o.a.mu.Unlock()
}

// finish returns the output and the arena it lives in, to be shared by the next execution. The
// output is not written again.
func (o *output) finish() (string, *textArena) {
	switch o.mode {
	case outOwner:
		o.release(true)
		return o.String(), o.a
	case outShared:
		return o.String(), o.a
	}
	s := o.sb.String()
	if len(s) == 0 {
		return s, nil
	}
	// The builder is done with: its spare capacity becomes the arena's room.
	buf := unsafe.Slice(unsafe.StringData(s), o.sb.Cap())
	a := &textArena{buf: buf, used: len(s)}
	if o.left != nil && o.leftLen > 0 {
		o.left.mu.Lock()
		o.left.copied, o.left.copiedLen = weak.Make(a), o.leftLen
		o.left.mu.Unlock()
	}
	return s, a
}

// abort gives up a claim after a failed execution.
func (o *output) abort() { o.release(false) }
