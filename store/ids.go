package store

import (
	"encoding/binary"
	"fmt"
)

// Token ids are stored as a uvarint count followed by one uvarint per id.
//
// Measured on real Qwen3 ids of prose and code (testdata/qwen3_ids.txt, 3221
// ids, max 98773): uvarint takes 2.00 bytes per id, fixed 3-byte packing 3 and
// fixed little-endian uint32 4. Halving the bytes doubles what fits in the L1
// byte budget and halves Redis traffic and the HMAC input, and HMAC-SHA256 is
// the dominant cost of opening an artifact; the uvarint decode loop itself is
// slower per id than a fixed-width one (BenchmarkIDCodec), which the smaller
// MAC input pays back (BenchmarkArtifactDecode, TestIDEncodingSize).

// appendIDs appends the encoding of ids to dst.
func appendIDs(dst []byte, ids []uint32) []byte {
	return appendIDValues(binary.AppendUvarint(dst, uint64(len(ids))), ids)
}

// appendIDValues appends one uvarint per id, without a count.
func appendIDValues(dst []byte, ids []uint32) []byte {
	for _, id := range ids {
		dst = binary.AppendUvarint(dst, uint64(id))
	}
	return dst
}

// decoder reads the artifact and record encodings. Every read is bounds
// checked; the first failure sticks in err and later reads return zero values,
// so decode functions check err once at the end.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("decode %s at %d bytes left: %w", what, len(d.b), ErrInvalid)
	}
	d.b = nil
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length prefix and checks that at least minEach bytes per
// element remain, which bounds every allocation by the input size.
func (d *decoder) count(what string, minEach int) int {
	v := d.uvarint(what)
	if d.err != nil {
		return 0
	}
	if v > uint64(len(d.b)/minEach) {
		d.fail(what)
		return 0
	}
	return int(v)
}

func (d *decoder) int(what string) int {
	v := d.uvarint(what)
	if v > 1<<40 {
		d.fail(what)
		return 0
	}
	return int(v)
}

func (d *decoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail(what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes(what string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.b) < n {
		d.fail(what)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string(what string, maxLen int) string {
	n := d.count(what, 1)
	if n > maxLen {
		d.fail(what)
		return ""
	}
	return string(d.bytes(what, n))
}

func (d *decoder) ids(what string) []uint32 {
	n := d.count(what, 1)
	if d.err != nil || n == 0 {
		return nil
	}
	ids := make([]uint32, n)
	b := d.b
	for i := range ids {
		// Inline fast path for the common one- and two-byte ids.
		if len(b) > 0 && b[0] < 0x80 {
			ids[i] = uint32(b[0])
			b = b[1:]
			continue
		}
		if len(b) > 1 && b[1] < 0x80 {
			ids[i] = uint32(b[0]&0x7f) | uint32(b[1])<<7
			b = b[2:]
			continue
		}
		v, k := binary.Uvarint(b)
		if k <= 0 || v > 0xffffffff {
			d.fail(what)
			return nil
		}
		ids[i] = uint32(v)
		b = b[k:]
	}
	d.b = b
	return ids
}

func (d *decoder) done(what string) {
	if d.err == nil && len(d.b) != 0 {
		d.fail(what + ": trailing bytes")
	}
}
