package store

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
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

// appendIDValues appends one uvarint per id, without a count. It writes blocks of ids into dst's
// spare capacity (room for the longest encoding, binary.MaxVarintLen32 bytes an id) with the one-
// to three-byte cases inline, instead of one AppendUvarint (and its capacity check) per id.
func appendIDValues(dst []byte, ids []uint32) []byte {
	const maxLen, minBlock = 5, 64
	for len(ids) > 0 {
		n := min(len(ids), (cap(dst)-len(dst))/maxLen)
		if n < min(len(ids), minBlock) {
			dst = slices.Grow(dst, maxLen*min(len(ids), 4096))
			continue
		}
		i, buf := len(dst), dst[:cap(dst)]
		for _, id := range ids[:n] {
			switch {
			case id < 1<<7:
				buf[i] = byte(id)
				i++
			case id < 1<<14:
				buf[i], buf[i+1] = byte(id)|0x80, byte(id>>7)
				i += 2
			case id < 1<<21:
				buf[i], buf[i+1], buf[i+2] = byte(id)|0x80, byte(id>>7)|0x80, byte(id>>14)
				i += 3
			default:
				i += binary.PutUvarint(buf[i:], uint64(id))
			}
		}
		dst, ids = buf[:i], ids[n:]
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
	_, ids := d.idsAfter(what, idParts{})
	return ids
}

// idParts is a sequence of ids held as two slices (an artifact's PromptIDs and GeneratedIDs).
type idParts struct{ a, b []uint32 }

func (p idParts) len() int { return len(p.a) + len(p.b) }

// prefix is p's first n ids (n <= p.len()).
func (p idParts) prefix(n int) idParts {
	if n <= len(p.a) {
		return idParts{a: p.a[:n:n]}
	}
	return idParts{a: p.a, b: p.b[: n-len(p.a) : n-len(p.a)]}
}

// idsAfter reads ids as ids does, except that the first of them known already (up to
// known.len()) are not decoded: it returns them as known's own slices (head, not copied) and
// decodes only the rest (tail). They are stepped over by counting the bytes that end a uvarint
// (below 0x80), eight bytes at a time while the word cannot hold the last one; those bytes are
// only checked for where they end, not for their range, which does not matter since the ids
// read are known's.
func (d *decoder) idsAfter(what string, known idParts) (head idParts, tail []uint32) {
	n := d.count(what, 1)
	if d.err != nil || n == 0 {
		return idParts{}, nil
	}
	k := min(n, known.len())
	if k > 0 && !d.skipUvarints(k) {
		d.fail(what)
		return idParts{}, nil
	}
	if k == n {
		return known.prefix(k), nil
	}
	ids := make([]uint32, n-k)
	b := d.b
	for i := range ids {
		// Inline fast path for the common one- to three-byte ids.
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
		if len(b) > 2 && b[2] < 0x80 {
			ids[i] = uint32(b[0]&0x7f) | uint32(b[1]&0x7f)<<7 | uint32(b[2])<<14
			b = b[3:]
			continue
		}
		v, w := binary.Uvarint(b)
		if w <= 0 || v > 0xffffffff {
			d.fail(what)
			return idParts{}, nil
		}
		ids[i] = uint32(v)
		b = b[w:]
	}
	d.b = b
	return known.prefix(k), ids
}

// skipUvarints steps d over n uvarints, reporting whether there were as many.
func (d *decoder) skipUvarints(n int) bool {
	b := d.b
	const highBits = 0x8080808080808080
	for len(b) >= 8 {
		ends := bits.OnesCount64(^binary.LittleEndian.Uint64(b) & highBits)
		if ends >= n {
			break
		}
		n -= ends
		b = b[8:]
	}
	for i, c := range b {
		if c < 0x80 {
			if n--; n == 0 {
				d.b = b[i+1:]
				return true
			}
		}
	}
	return false
}

func (d *decoder) done(what string) {
	if d.err == nil && len(d.b) != 0 {
		d.fail(what + ": trailing bytes")
	}
}
