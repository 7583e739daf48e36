package stream_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/stitchllm/stitch/stream"
)

type sseEvent struct {
	Event string
	Data  string
}

// readAll decodes every event; err is the error that ended decoding (nil for
// a clean io.EOF).
func readAll(r io.Reader, max int) ([]sseEvent, error) {
	d := stream.NewDecoder(r)
	d.MaxEventSize = max
	var out []sseEvent
	for {
		m, err := d.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, sseEvent{string(m.Event), string(m.Data)})
	}
}

func TestDecoder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"empty", "", nil},
		{"one", "data: hello\n\n", []sseEvent{{"", "hello"}}},
		{"no space", "data:hello\n\n", []sseEvent{{"", "hello"}}},
		{"only one space removed", "data:  two\n\n", []sseEvent{{"", " two"}}},
		{"multi-line data", "data: a\ndata: b\ndata\n\n", []sseEvent{{"", "a\nb\n"}}},
		{"empty data dispatches", "data:\n\n", []sseEvent{{"", ""}}},
		{"no data no dispatch", "event: x\n\ndata: y\n\n", []sseEvent{{"", "y"}}},
		{"event type", "event: response.created\ndata: {}\n\n", []sseEvent{{"response.created", "{}"}}},
		{"comments and unknown fields", ": ping\nid: 3\nretry: 10\nfoo: bar\ndata: x\n\n", []sseEvent{{"", "x"}}},
		{"CRLF", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", []sseEvent{{"", "a\nb"}, {"", "c"}}},
		{"CR only", "data: a\rdata: b\r\rdata: c\r\r", []sseEvent{{"", "a\nb"}, {"", "c"}}},
		{"mixed", "data: a\r\n\ndata: b\r\r\n", []sseEvent{{"", "a"}, {"", "b"}}},
		{"BOM", "\xEF\xBB\xBFdata: a\n\n", []sseEvent{{"", "a"}}},
		{"BOM only once", "\xEF\xBB\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n", []sseEvent{{"", "a"}}},
		{"partial event at EOF discarded", "data: a\n\ndata: b\n", []sseEvent{{"", "a"}}},
		{"partial line at EOF discarded", "data: a\n\ndata: b", []sseEvent{{"", "a"}}},
		{"colon in value", "data: {\"a\":1}\n\n", []sseEvent{{"", `{"a":1}`}}},
		{"field without colon", "data\n\n", []sseEvent{{"", ""}}},
		{"vllm done", "data: [DONE]\n\n", []sseEvent{{"", "[DONE]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in)), iotest.DataErrReader(strings.NewReader(tt.in))} {
				got, err := readAll(r, 0)
				if err != nil {
					t.Fatalf("Decode(%q): %v", tt.in, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Decode(%q) (-want +got):\n%s", tt.in, diff)
				}
			}
		})
	}
}

func TestDecoderLongLinesAndLimit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100_000)
	in := "data: " + long + "\n\ndata: a\ndata: " + long + "\n\n"
	got, err := readAll(iotest.HalfReader(strings.NewReader(in)), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []sseEvent{{"", long}, {"", "a\n" + long}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("long events (-want +got):\n%s", diff)
	}
	if _, err := readAll(strings.NewReader(in), 50_000); !errors.Is(err, stream.ErrEventTooLarge) {
		t.Errorf("MaxEventSize 50000: err = %v, want ErrEventTooLarge", err)
	}
}

func TestDecoderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	got, err := readAll(r, 0)
	if !errors.Is(err, boom) || len(got) != 1 {
		t.Errorf("got %v, %v; want one event then boom", got, err)
	}
}

// chunkedReader returns the input in pieces of the given sizes (cycled).
type chunkedReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (r *chunkedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(r.sizes) > 0 {
		n = int(r.sizes[r.i%len(r.sizes)])%17 + 1
		r.i++
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func FuzzSSEDecode(f *testing.F) {
	f.Add([]byte("data: a\n\n"), []byte{3})
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n: c\rdata:d\r\r"), []byte{0, 5, 1})
	f.Add([]byte("\xEF\xBB\xBFevent: x\ndata: [DONE]\n\n"), []byte{1})
	f.Add([]byte("data: {\"choices\":[{\"token_ids\":[1,2]}]}\n\ndata: [DONE]\n\n"), []byte{7, 2})
	f.Fuzz(func(t *testing.T, in []byte, sizes []byte) {
		want, werr := readAll(bytes.NewReader(in), 1<<16)
		got, gerr := readAll(&chunkedReader{data: in, sizes: sizes}, 1<<16)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: whole %v, chunked %v", werr, gerr)
		}
		if werr == nil {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("chunking changed events (-whole +chunked):\n%s", diff)
			}
		}
	})
}
