package store

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAppendIDValues: the block encoder writes what one binary.AppendUvarint per id writes, at
// every length class's edges, whatever room dst has, after existing bytes; and idsAfter reads it
// back with any number of leading ids known.
func TestAppendIDValues(t *testing.T) {
	edges := []uint32{0, 1, 127, 128, 1<<14 - 1, 1 << 14, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, 1<<32 - 1}
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]uint32, 5000)
	for i := range random {
		random[i] = r.Uint32() >> r.UintN(32) // every length class
	}
	for _, tc := range []struct {
		name string
		ids  []uint32
		room int
	}{
		{"none", nil, 0},
		{"edges, no room", edges, 0},
		{"edges, exact room", edges, 44},
		{"random, no room", random, 0},
		{"random, 3 bytes an id", random, 3 * len(random)},
		{"random, 5 bytes an id", random, 5 * len(random)},
		{"real", realIDs(t, 10_000), 2 * 10_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []byte
			want = append(want, "head"...)
			for _, id := range tc.ids {
				want = binary.AppendUvarint(want, uint64(id))
			}
			got := appendIDValues(append(make([]byte, 0, 4+tc.room), "head"...), tc.ids)
			if !bytes.Equal(got, want) {
				t.Fatalf("encoding differs from AppendUvarint's (%d vs %d bytes)", len(got), len(want))
			}
			enc := appendIDs(nil, tc.ids)
			for _, k := range []int{0, min(1, len(tc.ids)), len(tc.ids) / 2, len(tc.ids)} {
				known := idParts{a: tc.ids[:k/2], b: tc.ids[k/2 : k]}
				for _, known := range []idParts{known, {a: tc.ids[:k]}} {
					d := &decoder{b: enc}
					head, tail := d.idsAfter("ids", known)
					back := append(append(append([]uint32(nil), head.a...), head.b...), tail...)
					if d.err != nil || len(d.b) != 0 || head.len() != k || !slices.Equal(back, tc.ids) {
						t.Fatalf("%d known: read back %d ids, %d of them known (err %v, %d bytes left)", k, len(back), head.len(), d.err, len(d.b))
					}
				}
			}
		})
	}
}
