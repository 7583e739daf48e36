package stream_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stitchllm/stitch/stream"
)

// TestFamilyRanges pins the token ranges of items: markers belong to their
// call, the text before a call ends where the call's region starts.
func TestFamilyRanges(t *testing.T) {
	type rng struct {
		Kind       stream.PieceKind
		Start, End int
	}
	tests := []struct {
		suite  famSuite
		output []string // one token each (markers or single bytes)
		want   []rng
	}{
		{hermesSuite, []string{"H", "i", "<tool_call>", "{", "\"", "n", "a", "m", "e", "\"", ":", "\"", "f", "\"", ",", "\"", "a", "r", "g", "u", "m", "e", "n", "t", "s", "\"", ":", "{", "}", "}", "</tool_call>", "\n", "<tool_call>", "{", "\"", "n", "a", "m", "e", "\"", ":", "\"", "g", "\"", ",", "\"", "a", "r", "g", "u", "m", "e", "n", "t", "s", "\"", ":", "{", "}", "}", "</tool_call>", "<|im_end|>"},
			[]rng{{stream.PieceTextDone, 0, 2}, {stream.PieceToolCallDone, 2, 31}, {stream.PieceToolCallDone, 32, 61}}},
		{deepseekV31Suite, []string{"o", "k", dsCalls, dsCall, "f", dsSep, "{", "}", dsCallE, dsCall, "g", dsSep, "{", "}", dsCallE, dsCallsE, dsEOS},
			[]rng{{stream.PieceTextDone, 0, 2}, {stream.PieceToolCallDone, 2, 9}, {stream.PieceToolCallDone, 9, 15}}},
		{mistralV11Suite, []string{"[THINK]", "x", "[/THINK]", "[TOOL_CALLS]", "f", "[ARGS]", "{", "}", "[TOOL_CALLS]", "g", "{", "}", "</s>"},
			[]rng{{stream.PieceReasoningDone, 0, 3}, {stream.PieceToolCallDone, 3, 8}, {stream.PieceToolCallDone, 8, 12}}},
	}
	for _, tt := range tests {
		t.Run(tt.suite.tool, func(t *testing.T) {
			tz := bytesTokenizer(tt.suite.markerStrings(t)...)
			p := tt.suite.newParser(t, tz, nil)
			var ids []uint32
			for _, s := range tt.output {
				enc := tz.encode(s)
				if len(enc) != 1 {
					t.Fatalf("%q is %d tokens", s, len(enc))
				}
				ids = append(ids, enc[0])
			}
			var pieces []stream.Piece
			for _, id := range ids {
				pieces = p.Append(pieces, id)
			}
			pieces = p.Finish(pieces)
			var got []rng
			for _, pc := range pieces {
				switch pc.Kind {
				case stream.PieceTextDone, stream.PieceReasoningDone, stream.PieceToolCallDone:
					got = append(got, rng{pc.Kind, pc.Start, pc.End})
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ranges (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFamilyCallIDReachesEvents checks that a model-written call id is the
// function_call's call_id from output_item.added on (issue 16 item 6).
func TestFamilyCallIDReachesEvents(t *testing.T) {
	s := mistralV11Suite
	tz := bytesTokenizer(s.markerStrings(t)...)
	p := s.newParser(t, tz, nil)
	c := stream.NewConverter(stream.ConverterOptions{Output: p, Emitter: stream.EmitterOptions{NewID: counterIDs(), Now: fixedNow}})
	evs := c.Start(nil)
	evs = c.Chunk(evs, &stream.Chunk{TokenIDs: tz.encode(`[TOOL_CALLS]get_weather[CALL_ID]a1b2C3d4E[ARGS]{"city": "Paris"}</s>`), FinishReason: "stop"})
	evs = c.End(evs)
	n := 0
	for _, ev := range evs {
		if oe, ok := ev.(*stream.OutputItemEvent); ok && oe.Item.Type == stream.ItemFunctionCall {
			n++
			if oe.Item.CallID != "a1b2C3d4E" {
				t.Errorf("%s: call_id %q, want the model's a1b2C3d4E", oe.Type, oe.Item.CallID)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d function_call item events, want 2", n)
	}
	if out := c.Response().Output; len(out) != 1 || out[0].CallID != "a1b2C3d4E" || out[0].Arguments != `{"city": "Paris"}` {
		t.Errorf("output = %+v", out)
	}
}

func TestFamilyReasoningOnly(t *testing.T) {
	s := famSuite{reasoning: "qwen3", endOfTurn: []string{"<|im_end|>"}, bpe: []string{"qwen3"}, cases: []famCase{
		{name: "reasoning", output: "<think>\na\n</think>\n\nb<tool_call>x</tool_call><|im_end|>", want: []outItem{reasoning("a"), text("b<tool_call>x</tool_call>")}},
	}}
	s.run(t)
}

func TestFamilyForcedPrefixesParse(t *testing.T) {
	// Every family's Named prefix, followed by a minimal completion in its
	// format, parses as one complete call of that name.
	rest := map[string]string{
		"hermes":       "{}}\n</tool_call>",
		"qwen3_coder":  "</function>\n</tool_call>",
		"llama3_json":  "{}}",
		"pythonic":     ")]",
		"mistral":      "{}",
		"deepseek_v3":  "{}\n```" + dsCallE + dsCallsE,
		"deepseek_v31": "{}" + dsCallE + dsCallsE,
		"kimi_k2":      "{}" + kimiCallE + kimiSecE,
		"glm45":        "</tool_call>",
		"glm47":        "</tool_call>",
	}
	for _, newSpec := range toolParsers {
		spec := newSpec()
		name := spec.Name
		t.Run(name, func(t *testing.T) {
			s := famSuite{tool: name, endOfTurn: []string{"<eot>"}}
			tz := bytesTokenizer(s.markerStrings(t)...)
			p := s.newParser(t, tz, func(o *stream.FamilyOptions) { o.Prefill = tz.encode(spec.Forced.Named("fn")) })
			got := collect(t, p, tz.encode(rest[name]+"<eot>"))
			want := []outItem{call("fn", "{}")}
			if name == "kimi_k2" {
				want[0].CallID = "functions.fn:0"
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Named prefix %q + %q (-want +got):\n%s", spec.Forced.Named("fn"), rest[name], diff)
			}
		})
	}
}

// TestQwen3CoderStreamsStrings checks that a string parameter streams while
// the model writes it, before </parameter>.
func TestQwen3CoderStreamsStrings(t *testing.T) {
	s := qwen3CoderSuite
	tok := model(t, "qwen3")
	tz := famTokenizer{name: "qwen3", lookup: tok, encode: tok.Encode, dec: func() stream.TokenDecoder { return tok.NewDecodeStream() }}
	p := s.newParser(t, tz, nil)
	head := tok.Encode("<tool_call>\n<function=write>\n<parameter=content>\n")
	body := tok.Encode("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	var pieces []stream.Piece
	for _, id := range head {
		pieces = p.Append(pieces, id)
	}
	var streamed string
	for _, id := range body {
		for _, pc := range p.Append(nil, id) {
			if pc.Kind == stream.PieceArguments {
				streamed += pc.Text
			}
		}
	}
	// All but the final "\n" (it may be the one vLLM strips before
	// </parameter>) is out before the tag arrives.
	if want := `package main\n\nfunc main() {\n\tprintln(\"hi\")\n}`; streamed != want {
		t.Errorf("streamed before </parameter>: %q, want %q", streamed, want)
	}
}

// TestFamilyCombinationsKeepContract feeds seeded random outputs built from
// every marker of a tool parser and a reasoning parser (all pairs, and each
// alone) and checks the piece contract; the fuzz targets go deeper per suite.
func TestFamilyCombinationsKeepContract(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 2))
	frags := []string{"{", "}", "\"name\"", ": ", "\"f\"", ", ", "\"arguments\"", "\"parameters\"", "[", "]", "(", ")", "=", "x", "1", "\n", " ",
		"<function=", "<parameter=", "</parameter>", "</function>", ">", "functions.f:0", "```json\n", "\n```", "é", "'", "\\", ";", "f"}
	reasonings := []string{""}
	for _, f := range reasoningParsers {
		reasonings = append(reasonings, f().Name)
	}
	tools := []string{""}
	for _, f := range toolParsers {
		tools = append(tools, f().Name)
	}
	for _, tool := range tools {
		for _, rs := range reasonings {
			s := famSuite{tool: tool, reasoning: rs, endOfTurn: []string{"<eot>"}}
			markers := s.markerStrings(t)
			tz := bytesTokenizer(markers...)
			for i := 0; i < 300; i++ {
				var b strings.Builder
				for n := rng.IntN(24); n > 0; n-- {
					if rng.IntN(3) == 0 {
						b.WriteString(markers[rng.IntN(len(markers))])
					} else {
						b.WriteString(frags[rng.IntN(len(frags))])
					}
				}
				open, parallel, disable, forced := rng.IntN(2) == 0, rng.IntN(3) > 0, rng.IntN(5) == 0, rng.IntN(4)
				p := s.newParser(t, tz, func(o *stream.FamilyOptions) {
					o.ThinkingOpen, o.ParallelToolCalls, o.DisableToolCalls = open, parallel, disable
					if tool != "" {
						spec := toolSpec(t, tool)
						switch forced {
						case 1:
							o.Prefill = tz.encode(spec.Forced.Required)
						case 2:
							o.Prefill = tz.encode(spec.Forced.Named("f"))
						}
					}
				})
				ids := tz.encode(b.String())
				var pieces []stream.Piece
				for _, id := range ids {
					pieces = p.Append(pieces, id)
				}
				pieces = p.Finish(pieces)
				if _, err := summarize(pieces, len(ids)); err != nil {
					t.Fatalf("tool %q reasoning %q open %v parallel %v disable %v forced %d, output %q: %v\npieces %+v", tool, rs, open, parallel, disable, forced, b.String(), err, pieces)
				}
			}
		}
	}
}
