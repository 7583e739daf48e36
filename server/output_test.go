package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/stream"
)

// asciiDecoder decodes id n as the byte n (ids below 128 only).
type asciiDecoder struct{}

func (asciiDecoder) Next(id uint32) string { return string(rune(id)) }
func (asciiDecoder) Flush() string         { return "" }

// flushRecorder is a ResponseWriter that counts flushes and the bytes written since the last one.
type flushRecorder struct {
	h         http.Header
	body      bytes.Buffer
	flushes   int
	unflushed int
}

func (r *flushRecorder) Header() http.Header {
	if r.h == nil {
		r.h = http.Header{}
	}
	return r.h
}
func (r *flushRecorder) WriteHeader(int) {}
func (r *flushRecorder) Write(p []byte) (int, error) {
	r.unflushed += len(p)
	return r.body.Write(p)
}
func (r *flushRecorder) Flush() { r.flushes, r.unflushed = r.flushes+1, 0 }

func (r *flushRecorder) events() int { return bytes.Count(r.body.Bytes(), []byte("event: ")) }

// upstreamEvents is a completions stream of n one-token chunks, a finish and [DONE], one SSE event
// per element.
func upstreamEvents(n int) [][]byte {
	var out [][]byte
	for i := range n {
		id := 'a' + i%26
		out = append(out, fmt.Appendf(nil, `data: {"choices":[{"index":0,"text":%q,"token_ids":[%d],"finish_reason":null}]}`+"\n\n", string(rune(id)), id))
	}
	out = append(out, []byte(`data: {"choices":[{"index":0,"text":"","token_ids":[],"finish_reason":"stop"}]}`+"\n\n"))
	out = append(out, []byte(`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":`+fmt.Sprint(n)+`,"total_tokens":`+fmt.Sprint(n+3)+"}}\n\n"))
	return append(out, []byte("data: [DONE]\n\n"))
}

func newTestOutput() *output {
	// The default family on a vocabulary whose markers lie above the ASCII ids.
	markers := map[string]uint32{"<think>": 1000, "</think>": 1001, "<tool_call>": 1002, "</tool_call>": 1003}
	fam, err := family.New(family.Default(), family.Vocabulary{TokenID: func(s string) (uint32, bool) { id, ok := markers[s]; return id, ok }})
	if err != nil {
		panic(err)
	}
	conv := stream.NewConverter(stream.ConverterOptions{
		Output:  fam.NewParser(asciiDecoder{}, family.Turn{ParallelToolCalls: true}),
		Emitter: stream.EmitterOptions{NewID: seqIDs(), Now: time.Now},
	})
	return &output{conv: conv, now: time.Now}
}

// oneEventReader hands out one upstream event per Read and calls before first.
type oneEventReader struct {
	events [][]byte
	before func(i int)
	i, off int
}

func (r *oneEventReader) Read(p []byte) (int, error) {
	r.before(r.i)
	if r.i == len(r.events) {
		return 0, fmt.Errorf("read past [DONE]")
	}
	n := copy(p, r.events[r.i][r.off:])
	if r.off += n; r.off == len(r.events[r.i]) {
		r.i, r.off = r.i+1, 0
	}
	return n, nil
}

// An upstream that delivers many chunks at once is forwarded in a few flushes, not one per event.
func TestConsumeCoalescesBufferedChunks(t *testing.T) {
	t.Parallel()
	const tokens = 400
	rec := &flushRecorder{}
	sink := newSSESink(rec)
	o := newTestOutput()
	if err := sink.write(o.begin()); err != nil {
		t.Fatal(err)
	}
	body := bytes.NewReader(bytes.Join(upstreamEvents(tokens), nil))
	if err := o.consume(context.Background(), body, sink); err != nil {
		t.Fatal(err)
	}
	if err := sink.write(o.finish(nil)); err != nil {
		t.Fatal(err)
	}
	deltas := bytes.Count(rec.body.Bytes(), []byte("event: response.output_text.delta\n"))
	if deltas != tokens {
		t.Fatalf("%d text deltas, want %d", deltas, tokens)
	}
	if rec.unflushed != 0 {
		t.Fatalf("%d bytes left unflushed", rec.unflushed)
	}
	if ev := rec.events(); rec.flushes*10 > ev {
		t.Fatalf("%d flushes for %d events: want at most one per 10", rec.flushes, ev)
	}
	if got := string(rec.body.Bytes()[bytes.LastIndex(rec.body.Bytes(), []byte("event: ")):]); !bytes.HasPrefix([]byte(got), []byte("event: response.completed\n")) {
		t.Fatalf("last event %.40q, want response.completed", got)
	}
}

// An upstream that delivers one chunk at a time gets every event flushed before the proxy reads
// again: nothing is held while it waits.
func TestConsumeFlushesBeforeEachRead(t *testing.T) {
	t.Parallel()
	const tokens = 50
	rec := &flushRecorder{}
	sink := newSSESink(rec)
	o := newTestOutput()
	if err := sink.write(o.begin()); err != nil {
		t.Fatal(err)
	}
	lastDeltas := -1
	body := &oneEventReader{events: upstreamEvents(tokens), before: func(i int) {
		if rec.unflushed != 0 {
			t.Errorf("read %d: %d bytes written but not flushed while waiting for upstream", i, rec.unflushed)
		}
		deltas := bytes.Count(rec.body.Bytes(), []byte("event: response.output_text.delta\n"))
		if i >= 1 && i <= tokens && deltas != i {
			// Chunk i-1 carried token i-1: its delta must be out before chunk i is read.
			t.Errorf("read %d: %d text deltas out, want %d", i, deltas, i)
		}
		lastDeltas = deltas
	}}
	if err := o.consume(context.Background(), body, sink); err != nil {
		t.Fatal(err)
	}
	if lastDeltas != tokens {
		t.Fatalf("%d deltas before the last read, want %d", lastDeltas, tokens)
	}
}

// A burst larger than the queue bound is forwarded in pieces, not held until its end.
func TestSSESinkQueueBound(t *testing.T) {
	t.Parallel()
	rec := &flushRecorder{}
	sink := newSSESink(rec)
	o := newTestOutput()
	events := o.begin()
	for len(sink.buf) < maxQueued/2 {
		if err := sink.queue(events); err != nil {
			t.Fatal(err)
		}
	}
	if rec.flushes != 0 {
		t.Fatalf("%d flushes under the bound", rec.flushes)
	}
	for range maxQueued {
		if err := sink.queue(events); err != nil {
			t.Fatal(err)
		}
		if len(sink.buf) > maxQueued+4096 {
			t.Fatalf("%d bytes queued, bound %d", len(sink.buf), maxQueued)
		}
		if rec.flushes >= 3 {
			return
		}
	}
	t.Fatalf("%d flushes", rec.flushes)
}
