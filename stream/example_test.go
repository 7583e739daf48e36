package stream_test

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stitchllm/stitch/stream"
)

// Example wires one turn the way the server does: upstream SSE body in,
// Responses SSE out, on the Qwen3 tokenizer ("Hi" is id 13048, <|im_end|> 151645).
func Example() {
	upstream := strings.NewReader(
		"data: {\"choices\":[{\"index\":0,\"text\":\"Hi\",\"token_ids\":[13048],\"prompt_token_ids\":[1,2,3]}],\"usage\":null}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"stop\",\"token_ids\":[151645]}],\"usage\":null}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3,\"total_tokens\":6}}\n\n" +
			"data: [DONE]\n\n")
	tok := qwen3Tokenizer()
	out, err := qwen3Parser(tok, tok.NewDecodeStream(), nil) // the Qwen3 family's parser (package family builds it)
	if err != nil {
		fmt.Println(err)
		return
	}
	conv := stream.NewConverter(stream.ConverterOptions{
		Output:  out,
		Emitter: stream.EmitterOptions{Response: stream.Response{Model: "qwen3"}, NewID: counterIDs(), Now: fixedNow},
	})
	var types []string
	write := func(events []stream.Event) {
		for _, ev := range events {
			types = append(types, ev.EventType())
		}
		_ = stream.NewEncoder(io.Discard).EncodeAll(events) // the HTTP response writer, flushed per call
	}
	write(conv.Start(nil))
	chunks := stream.NewChunkReader(upstream)
	for {
		ch, err := chunks.Next()
		if err == io.EOF {
			write(conv.End(nil))
			break
		}
		if err != nil {
			write(conv.Fail(nil, "server_error", err.Error()))
			break
		}
		write(conv.Chunk(nil, ch))
	}
	fmt.Fprintln(os.Stdout, strings.Join(types, "\n"))
	r := conv.Response()
	fmt.Println(r.Status, r.Output[0].Text(), conv.TokenIDs(), conv.Ranges()[0].Start, conv.Ranges()[0].End)
	// Output:
	// response.created
	// response.in_progress
	// response.output_item.added
	// response.content_part.added
	// response.output_text.delta
	// response.output_text.done
	// response.content_part.done
	// response.output_item.done
	// response.completed
	// completed Hi [13048 151645] 0 1
}

// ExampleNewFamilyParser reads a Qwen3-Coder turn: the parsers are vLLM's
// qwen3_coder and qwen3 (package family's registry picks them by those names), their markers found in the tokenizer, and the XML parameters
// converted to JSON by the tool's schema.
func ExampleNewFamilyParser() {
	tok := qwen3Tokenizer()
	tool, reasoning := stream.Qwen3CoderToolParser(), stream.Qwen3ReasoningParser()
	markers, err := stream.ResolveMarkers(tok, tool, reasoning)
	if err != nil {
		fmt.Println(err)
		return
	}
	imEnd, _ := tok.TokenID("<|im_end|>")
	p, _ := stream.NewFamilyParser(tok.NewDecodeStream(), tool, reasoning, stream.FamilyOptions{
		Markers:           markers,
		EndOfTurn:         []uint32{imEnd},
		ParallelToolCalls: true,
		Tools:             []stream.ToolSchema{{Name: "get_weather", Parameters: []byte(`{"properties": {"days": {"type": "integer"}}}`)}},
	})
	var pieces []stream.Piece
	for _, id := range tok.Encode("<think>\nweather\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call><|im_end|>") {
		pieces = p.Append(pieces, id)
	}
	pieces = p.Finish(pieces)
	var args string
	for _, pc := range pieces {
		switch pc.Kind {
		case stream.PieceReasoning, stream.PieceToolCall:
			fmt.Printf("%s %q\n", pc.Kind, pc.Text)
		case stream.PieceArguments:
			args += pc.Text
		case stream.PieceToolCallDone:
			fmt.Printf("%s %s [%d,%d)\n", pc.Kind, args, pc.Start, pc.End)
		}
	}
	// Output:
	// reasoning "weather"
	// tool_call "get_weather"
	// tool_call_done {"city": "Paris", "days": 3} [6,37)
}
