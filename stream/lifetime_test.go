package stream_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/stitchllm/stitch/stream"
)

// A ChunkReader's chunks are what each parses to alone (chunkPrefix), and Chunk.Text and the events a Converter returns must stay what they were after later reads: the
// read buffer slides and is reused, and the text arena and event slab must never hand out memory
// that a later chunk overwrites. Each case keeps every Text and event of a long stream read in
// small pieces (so the buffer slides many times) and compares them at the end with copies taken
// when they were returned.
func TestChunkTextAndEventsOutliveLaterReads(t *testing.T) {
	t.Parallel()
	tok := tokenizer(t)
	ids := tok.Encode("<think>\n" + strings.Repeat("Reasoning goes on, \"quoted\"\n\tand tabbed. ", 80) + "\n</think>\n\n" +
		strings.Repeat("An answer with é, 漢字 and a\\backslash. ", 120) + "<|im_end|>")
	var body bytes.Buffer
	for i, id := range ids {
		finish := "null"
		if i == len(ids)-1 {
			finish = `"stop"`
		}
		// Texts of varied length and escapes, so arena blocks fill at different offsets.
		text := strings.Repeat("w", i%37) + []string{"", `\n`, `\"`, `é`, `\u00e9`}[i%5]
		fmt.Fprintf(&body, `data: {"id":"cmpl-%d","object":"text_completion","created":1,"model":"qwen3","choices":[{"index":0,"text":"%s","logprobs":null,"finish_reason":%s,"stop_reason":null,"token_ids":[%d],"prompt_token_ids":null}],"usage":null}`+"\n\n", i, text, finish, id)
	}
	var lines [][]byte // each chunk's data
	for _, event := range bytes.Split(body.Bytes(), []byte("\n\n")) {
		if len(event) > 0 {
			lines = append(lines, bytes.TrimPrefix(event, []byte("data: ")))
		}
	}
	body.WriteString("data: [DONE]\n\n")

	for _, tc := range []struct {
		name string
		read func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"half", iotest.HalfReader},
		{"onebyte", iotest.OneByteReader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conv := stream.NewConverter(stream.ConverterOptions{
				Output:  mustQwen3Parser(t, tok, tok.NewDecodeStream(), nil),
				Emitter: stream.EmitterOptions{NewID: counterIDs(), Now: fixedNow},
			})
			r := stream.NewChunkReader(tc.read(bytes.NewReader(body.Bytes())))
			var texts, textCopies []string
			var events []stream.Event
			var encoded []byte
			keep := func(evs []stream.Event) {
				for _, ev := range evs {
					events = append(events, ev)
					encoded = stream.AppendEvent(encoded, ev)
				}
			}
			keep(conv.Start(nil))
			for {
				ch, err := r.Next()
				if err == io.EOF {
					keep(conv.End(nil))
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				// What the reader parsed (from the remembered prefix on) is what the chunk parses to alone.
				var alone stream.Chunk
				if err := stream.ParseChunk(lines[len(texts)], &alone); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(alone, *ch, cmpopts.IgnoreUnexported(stream.Chunk{}), cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("chunk %d (-alone +reader):\n%s", len(texts), diff)
				}
				texts = append(texts, ch.Text)
				textCopies = append(textCopies, strings.Clone(ch.Text))
				keep(conv.Chunk(nil, ch))
			}
			for i := range texts {
				if texts[i] != textCopies[i] {
					t.Fatalf("chunk %d: Text changed after later reads: %q, was %q", i, texts[i], textCopies[i])
				}
			}
			var again []byte
			for _, ev := range events {
				again = stream.AppendEvent(again, ev)
			}
			if !bytes.Equal(again, encoded) {
				t.Fatalf("events changed after later chunks:\n%s", firstDiff(encoded, again))
			}
		})
	}
}

// firstDiff shows where two encodings first differ.
func firstDiff(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	lo := max(0, i-80)
	return fmt.Sprintf("at byte %d:\nwant …%q\n got …%q", i, want[lo:min(len(want), i+80)], got[lo:min(len(got), i+80)])
}
