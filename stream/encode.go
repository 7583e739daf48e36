package stream

import (
	"fmt"
	"io"
)

// Encoder writes Responses events as server-sent events:
//
//	event: <type>\ndata: <json>\n\n
//
// with no trailing `data: [DONE]` (OpenAI sends none and clients do not expect
// one). Each Encode is a single Write; flushing is the caller's business. After
// the first write error every call returns that error. Encode does not allocate
// once its buffer has grown to the largest event. An Encoder is not safe for
// concurrent use.
type Encoder struct {
	w   io.Writer
	buf []byte
	err error
}

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder {
	return &Encoder{w: w, buf: make([]byte, 0, 1024)}
}

// Encode writes one event.
func (e *Encoder) Encode(ev Event) error {
	if e.err != nil {
		return e.err
	}
	b := AppendEvent(e.buf[:0], ev)
	e.buf = b
	if _, err := e.w.Write(b); err != nil {
		e.err = fmt.Errorf("write %s event: %w", ev.EventType(), err)
	}
	return e.err
}

// AppendEvent appends ev as the Encoder writes it (`event: <type>\ndata: <json>\n\n`) to dst,
// for a caller that batches several events into one write.
func AppendEvent(dst []byte, ev Event) []byte {
	if td, ok := ev.(*textDeltaEvent); ok {
		return td.appendSSE(dst)
	}
	dst = append(dst, "event: "...)
	dst = append(dst, ev.EventType()...)
	dst = append(dst, "\ndata: "...)
	dst = ev.AppendJSON(dst)
	return append(dst, '\n', '\n')
}

// EncodeAll writes events in order, stopping at the first error.
func (e *Encoder) EncodeAll(events []Event) error {
	for _, ev := range events {
		if err := e.Encode(ev); err != nil {
			return err
		}
	}
	return nil
}
