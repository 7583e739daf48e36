package stream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
)

// Message is one dispatched server-sent event.
//
// Both slices alias the Decoder's buffers: they are valid only until the next
// call to [Decoder.Next]. Copy what you keep.
type Message struct {
	// Event is the value of the last `event:` field, or empty (meaning "message").
	Event []byte
	// Data is the event's `data:` lines joined with "\n" (never nil for a
	// dispatched event, possibly empty).
	Data []byte
}

// defaultMaxEventSize bounds one line or one event's data; vLLM's first chunk
// carries the whole prompt's token ids (a 128k-token prompt is under 1 MiB).
const defaultMaxEventSize = 64 << 20

// Decoder reads server-sent events from an io.Reader as the W3C/WHATWG
// "event stream interpretation" describes: lines end in CRLF, LF or CR; a
// leading BOM is skipped; `:` starts a comment; `data:` lines (one optional space
// after the colon) accumulate joined by "\n"; an empty line dispatches; the
// `id` and `retry` fields and unknown fields are ignored; an event cut off by
// end of input is discarded.
//
// A single-line event's data is returned without copying. The zero Decoder is
// not usable; use [NewDecoder]. A Decoder is not safe for concurrent use.
//
// The read buffer is taken at the first read, from Buffers when set; [Decoder.Release] gives it
// back when the stream is done.
type Decoder struct {
	// MaxEventSize bounds one line and one event's data, in bytes. Zero means
	// 64 MiB. Larger input makes Next fail with ErrEventTooLarge.
	MaxEventSize int
	// Buffers, when set before the first Next, lends the read buffers and takes them back
	// (Release, and whenever the Decoder moves to a buffer of another size). Nil: the Decoder
	// allocates its own.
	Buffers *BufferPool

	r      io.Reader
	buf    []byte // nil before the first read and after Release
	pos    int    // first unread byte
	end    int    // end of buffered bytes
	rerr   error
	skipLF bool // the previous line ended in CR: a following LF belongs to it
	begun  bool // past the optional BOM

	nData   int // data lines in the pending event
	dataOff int // single pending data line: buf[dataOff:dataOff+dataLen]
	dataLen int
	joined  []byte // pending data when nData > 1
	event   []byte // pending event type

	want       int  // the size to grow to the first time the buffer must grow (reserve); 0: doubling
	dispatched bool // an event was returned: a large buffer may give way to a small one
}

// readSize is the Decoder's initial buffer and the least room it leaves for a read: reads this
// large go straight from the connection into the buffer (bufio and net/http's chunked reader pass
// big reads through), so a burst of upstream events costs one read, as a reverse proxy's copy does.
const readSize = 32 << 10

// NewDecoder returns a Decoder reading from r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: r}
}

// reserve makes the first growth of the buffer go straight to n bytes (at most the event bound)
// instead of doubling from readSize, for a first event known to be about n bytes long. The
// buffer is still readSize until data comes: a stream waiting for its first byte (vLLM's
// prefill) holds only that.
func (d *Decoder) reserve(n int) {
	if d.end == 0 {
		d.want = min(n, d.maxSize()+4096)
	}
}

// shrinkAbove is the buffer size above which the Decoder moves to a readSize buffer once an
// event was returned and what is left to read fits in half of one: the first chunk's prompt echo
// needs a buffer as large as the prompt, the chunks after it a few hundred bytes each.
const shrinkAbove = 4 * readSize

// errReleased is what Next returns after Release.
var errReleased = errors.New("stream: decoder used after Release")

// Release gives the read buffer back to Buffers. Call it once the stream is done, however it
// ended; Message data from the Decoder must not be used after it (it may be another stream's
// buffer by then). Next then fails; a second Release does nothing.
func (d *Decoder) Release() {
	if d.buf != nil {
		d.Buffers.put(d.buf)
	}
	d.buf, d.pos, d.end, d.nData = nil, 0, 0, 0
	d.rerr = errReleased
}

func (d *Decoder) maxSize() int {
	if d.MaxEventSize > 0 {
		return d.MaxEventSize
	}
	return defaultMaxEventSize
}

// Next returns the next dispatched event. At the end of input it returns io.EOF
// (a partial trailing event is discarded, as the spec requires); read errors
// are returned as they are.
func (d *Decoder) Next() (Message, error) {
	for {
		start, n, err := d.line()
		if err != nil {
			return Message{}, err
		}
		if start < 0 {
			continue
		}
		if n == 0 {
			if d.nData == 0 {
				d.event = d.event[:0]
				continue
			}
			m := Message{Event: d.event}
			if d.nData == 1 {
				m.Data = d.buf[d.dataOff : d.dataOff+d.dataLen : d.dataOff+d.dataLen]
			} else {
				m.Data = d.joined
			}
			d.nData = 0
			d.dispatched = true
			// m.Event keeps its bytes until the next call reuses d.event.
			d.event = d.event[:0]
			return m, nil
		}
		if err := d.field(start, n); err != nil {
			return Message{}, err
		}
	}
}

// field processes the non-empty line d.buf[start:start+n].
func (d *Decoder) field(start, n int) error {
	line := d.buf[start : start+n]
	if line[0] == ':' {
		return nil // comment
	}
	name, vOff := line, n
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, vOff = line[:i], i+1
		if vOff < n && line[vOff] == ' ' {
			vOff++
		}
	}
	value := line[vOff:]
	switch string(name) {
	case "data":
		switch d.nData {
		case 0:
			d.dataOff, d.dataLen = start+vOff, n-vOff
		case 1:
			d.joined = append(d.joined[:0], d.buf[d.dataOff:d.dataOff+d.dataLen]...)
			fallthrough
		default:
			if len(d.joined)+1+len(value) > d.maxSize() {
				return ErrEventTooLarge
			}
			d.joined = append(d.joined, '\n')
			d.joined = append(d.joined, value...)
		}
		d.nData++
	case "event":
		d.event = append(d.event[:0], value...)
	}
	return nil
}

var bom = []byte("\xEF\xBB\xBF")

// line finds the next line, d.buf[start:start+n], without its terminator.
// start is -1 when only a LF completing an earlier CR was consumed.
func (d *Decoder) line() (start, n int, err error) {
	for {
		if d.pos < d.end {
			rest := d.buf[d.pos:d.end]
			if !d.begun {
				if len(rest) < len(bom) && d.rerr == nil && bytes.HasPrefix(bom, rest) {
					if err := d.fill(); err != nil { // too short to tell: read more
						return -1, 0, err
					}
					continue
				}
				d.begun = true
				if bytes.HasPrefix(rest, bom) {
					d.pos += len(bom)
					continue
				}
			}
			if d.skipLF {
				d.skipLF = false
				if rest[0] == '\n' {
					d.pos++
					return -1, 0, nil
				}
			}
			i := bytes.IndexByte(rest, '\n')
			scan := rest
			if i >= 0 {
				scan = rest[:i]
			}
			if j := bytes.IndexByte(scan, '\r'); j >= 0 {
				start = d.pos
				d.pos += j + 1
				d.skipLF = true
				return start, j, nil
			}
			if i >= 0 {
				start = d.pos
				d.pos += i + 1
				return start, i, nil
			}
		}
		if d.rerr != nil {
			return -1, 0, d.rerr
		}
		if err := d.fill(); err != nil {
			return -1, 0, err
		}
	}
}

// fill reads more input, compacting or growing the buffer first (so that at
// least half of it, or readSize, is free for the read). It keeps the pending
// single data line in the buffer so it can be returned without a copy. A Message returned
// before is invalid by now (fill runs inside Next), so the buffer may move.
func (d *Decoder) fill() error {
	if d.buf == nil {
		d.buf = d.Buffers.get(readSize)
	}
	keep := d.pos
	if d.nData == 1 && d.dataOff < keep {
		keep = d.dataOff
	}
	if d.dispatched && len(d.buf) > shrinkAbove && d.end-keep <= readSize/2 {
		d.move(readSize, keep) // the echo's buffer is done with: back to the pool
	} else if len(d.buf)-d.end < min(len(d.buf)/2, readSize) && keep > 0 {
		d.slide(d.buf, keep)
	}
	if len(d.buf)-d.end < min(len(d.buf)/2, readSize) {
		if d.end-d.pos > d.maxSize() || len(d.buf) > 2*d.maxSize()+4096 {
			return ErrEventTooLarge
		}
		n := 2*len(d.buf) + 4096
		if d.want > n {
			n = d.want // the first chunk's size is known: no doublings on the way (issue 32)
		}
		d.want = 0
		d.move(n, 0)
	}
	n, err := d.r.Read(d.buf[d.end:])
	if n < 0 || n > len(d.buf)-d.end {
		return fmt.Errorf("stream: reader returned invalid count %d", n)
	}
	d.end += n
	if err != nil {
		d.rerr = err
	}
	return nil
}

// move puts the unread bytes from keep on (with the pending data line) at the start of a buffer
// of at least n bytes and gives the old one back.
func (d *Decoder) move(n, keep int) {
	old := d.buf
	d.slide(d.Buffers.get(n), keep)
	d.Buffers.put(old)
}

// slide copies the unread bytes from keep on (with the pending data line) to the start of dst,
// which may be the buffer itself, and makes dst the buffer.
func (d *Decoder) slide(dst []byte, keep int) {
	d.end = copy(dst, d.buf[keep:d.end])
	d.pos -= keep
	if d.nData == 1 {
		d.dataOff -= keep
	}
	d.buf = dst
}

// BufferPool keeps the read buffers of finished streams for the next ones: a turn whose first
// chunk echoes a 100k-id prompt needs a buffer of about 700 KB, and allocating it per turn cost
// clearing it and the garbage collector's work on it (issue 32). It keeps at most a few large
// buffers of bounded size and as many small ones (a stream's buffer after its first chunk), the
// best fit going out first (NewBufferPool); a nil *BufferPool keeps none (every get allocates).
// It is safe for concurrent use. A buffer is held by one Decoder at a time: taken by get, owned
// until put, never put twice (Release clears the Decoder's reference).
type BufferPool struct {
	mu      sync.Mutex
	small   [][]byte // buffers of at most shrinkAbove bytes
	large   [][]byte
	keep    int // buffers kept at most, in each list
	maxSize int // larger buffers are dropped
}

// NewBufferPool returns a pool keeping at most buffers large buffers of at most maxBytes each,
// and buffers small ones (at most 128 KiB each): idle, it holds at most
// buffers × (maxBytes + 128 KiB).
func NewBufferPool(buffers, maxBytes int) *BufferPool {
	return &BufferPool{keep: buffers, maxSize: maxBytes}
}

// get returns a buffer of at least n bytes: the smallest kept one that fits and is not over four
// times n (a short stream does not hold an echo's buffer), else a new one, sized up to a class
// (a sixteenth of a power of two) so that a conversation's next, slightly longer prompt reuses it.
// Its bytes are what the last stream left: the Decoder reads into it before it looks.
func (p *BufferPool) get(n int) []byte {
	n = bufferClass(n)
	if p == nil {
		return make([]byte, n)
	}
	p.mu.Lock()
	list := &p.large
	if n <= shrinkAbove {
		list = &p.small
	}
	free := *list
	best := -1
	for i, b := range free {
		if c := cap(b); c >= n && c <= 4*n && (best < 0 || c < cap(free[best])) {
			best = i
		}
	}
	if best < 0 {
		p.mu.Unlock()
		return make([]byte, n)
	}
	b := free[best]
	last := len(free) - 1
	free[best], free[last] = free[last], nil
	*list = free[:last]
	p.mu.Unlock()
	return b[:cap(b)]
}

// put keeps b for a later get, unless it is over the size bound; when its list is full it
// replaces the smallest kept buffer if b is larger (the large ones are the costly ones to make).
func (p *BufferPool) put(b []byte) {
	if p == nil || cap(b) == 0 || cap(b) > p.maxSize {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	list := &p.large
	if cap(b) <= shrinkAbove {
		list = &p.small
	}
	if len(*list) < p.keep {
		*list = append(*list, b)
		return
	}
	free := *list
	small := -1
	for i := range free {
		if small < 0 || cap(free[i]) < cap(free[small]) {
			small = i
		}
	}
	if small >= 0 && cap(b) > cap(free[small]) {
		free[small] = b
	}
}

// bufferClass rounds n up to readSize, or above it to a multiple of a sixteenth of the power of
// two at or above n: at most an eighth more than n.
func bufferClass(n int) int {
	if n <= readSize {
		return readSize
	}
	step := 1 << (bits.Len(uint(n-1)) - 4)
	return (n + step - 1) / step * step
}
