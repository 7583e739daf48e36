package jinja

// A memoized loop's records grow with the conversation, and a continuation usually replays most
// of the previous execution's records unchanged (bulkReplay) and adds a few. Copying them into a
// new slice every execution costs the conversation (allocating and clearing it, and copying
// records full of pointers, is most of that). Instead a memo keeps a loop's records as a list of
// immutable segments: a continuation takes the previous list's first j records by sharing its
// segments (the last one cut short) and adds one segment of its own for the records it made.
// Segments are never written once their memo is returned, so any number of executions may
// continue the same memo at once (a retry, a branch) without copying or coordinating.
//
// The segments stay few without copying much: the records an execution made are merged with the
// last segment when that one is short (under recordSegment records), so every segment but the
// last holds at least recordSegment records and an execution copies fewer than recordSegment
// records besides its own.

// recordSegment is the length under which a list's last segment takes the next execution's
// records (copied into a new segment with them) rather than having them follow as a segment of
// their own.
const recordSegment = 16

// recordList is a memoized loop's records, in order: the concatenation of segs.
type recordList struct {
	segs [][]iterRecord
	n    int // the number of records
}

// at returns record i (0 ≤ i < l.n).
func (l *recordList) at(i int) *iterRecord {
	for _, s := range l.segs {
		if i < len(s) {
			return &s[i]
		}
		i -= len(s)
	}
	panic("jinja: record index out of range")
}

// prefix returns a list of the first j records, sharing l's segments.
func (l *recordList) prefix(j int) recordList {
	p := recordList{segs: make([][]iterRecord, 0, len(l.segs)+1), n: j}
	for _, s := range l.segs {
		if j == 0 {
			break
		}
		k := min(j, len(s))
		p.segs = append(p.segs, s[:k:k]) // full slice: nobody appends into a shared segment
		j -= k
	}
	return p
}

// appendTo appends copies of the first j records to dst.
func (l *recordList) appendTo(dst []iterRecord, j int) []iterRecord {
	for _, s := range l.segs {
		if j == 0 {
			break
		}
		k := min(j, len(s))
		dst = append(dst, s[:k]...)
		j -= k
	}
	return dst
}

// records returns the records as one slice (tests).
func (l *recordList) records() []iterRecord { return l.appendTo(nil, l.n) }

// keepRecords makes shared (a prefix of the previous execution's records) followed by own (the
// records this execution made) the records of loop n in the execution's memo.
func (ms *memoState) keepRecords(n *forNode, shared recordList, own []iterRecord) {
	l := shared
	if len(own) > 0 {
		if k := len(l.segs) - 1; k >= 0 && len(l.segs[k]) < recordSegment {
			merged := make([]iterRecord, 0, len(l.segs[k])+len(own))
			l.segs[k] = append(append(merged, l.segs[k]...), own...)
		} else {
			l.segs = append(l.segs, own)
		}
		l.n += len(own)
	}
	ms.next.loops[n] = l
}
