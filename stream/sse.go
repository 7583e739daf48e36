package stream

import (
	"bytes"
	"fmt"
	"io"
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
type Decoder struct {
	// MaxEventSize bounds one line and one event's data, in bytes. Zero means
	// 64 MiB. Larger input makes Next fail with ErrEventTooLarge.
	MaxEventSize int

	r      io.Reader
	buf    []byte
	pos    int // first unread byte
	end    int // end of buffered bytes
	rerr   error
	skipLF bool // the previous line ended in CR: a following LF belongs to it
	begun  bool // past the optional BOM

	nData   int // data lines in the pending event
	dataOff int // single pending data line: buf[dataOff:dataOff+dataLen]
	dataLen int
	joined  []byte // pending data when nData > 1
	event   []byte // pending event type
}

// readSize is the Decoder's initial buffer and the least room it leaves for a read: reads this
// large go straight from the connection into the buffer (bufio and net/http's chunked reader pass
// big reads through), so a burst of upstream events costs one read, as a reverse proxy's copy does.
const readSize = 32 << 10

// NewDecoder returns a Decoder reading from r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: r, buf: make([]byte, readSize)}
}

// reserve grows the empty buffer to n bytes (at most the event bound), before the first read.
func (d *Decoder) reserve(n int) {
	n = min(n, d.maxSize()+4096)
	if d.end == 0 && n > len(d.buf) { // a small echo fits the default buffer: nothing to do
		d.buf = make([]byte, n)
	}
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
// single data line in the buffer so it can be returned without a copy.
func (d *Decoder) fill() error {
	if len(d.buf)-d.end < min(len(d.buf)/2, readSize) {
		keep := d.pos
		if d.nData == 1 && d.dataOff < keep {
			keep = d.dataOff
		}
		if keep > 0 {
			d.end = copy(d.buf, d.buf[keep:d.end])
			d.pos -= keep
			if d.nData == 1 {
				d.dataOff -= keep
			}
		}
	}
	if len(d.buf)-d.end < min(len(d.buf)/2, readSize) {
		if d.end-d.pos > d.maxSize() || len(d.buf) > 2*d.maxSize()+4096 {
			return ErrEventTooLarge
		}
		nb := make([]byte, 2*len(d.buf)+4096)
		copy(nb, d.buf[:d.end])
		d.buf = nb
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
