// Package stream turns a vLLM /v1/completions server-sent-event stream (token ids)
// into OpenAI Responses API events and objects. It knows nothing of HTTP: callers
// hand it an io.Reader and an io.Writer.
//
// # Pipeline
//
// One model turn flows through four stages:
//
//  1. [Decoder] splits the upstream byte stream into W3C server-sent events
//     (https://html.spec.whatwg.org/multipage/server-sent-events.html).
//  2. [ChunkReader] (or [ParseChunk]) reads each event's data as a vLLM completion
//     chunk: the new token ids, finish reason, usage, or an in-stream error.
//  3. An [OutputParser] ([FamilyParser], [HarmonyParser]) consumes generated
//     token ids one at a time and reports semantic [Piece]s: reasoning text,
//     message text, tool-call name and argument bytes.
//  4. An [Emitter] turns pieces into the ordered Responses event stream
//     (response.created … response.completed) and the final [Response] object;
//     [Encoder] (or [AppendEvent]) writes the events as `event: <type>\ndata: <json>\n\n`.
//
// The first chunk echoes the whole prompt's ids (prompt_token_ids, ~700 KB for a 100k-token
// prompt). A ChunkReader told the request's own encoding of them
// ([ChunkReader.ExpectPromptEcho]) checks the echo by comparing bytes instead of reading the ids,
// and reports an echo that differs ([Chunk.PromptEchoDiffers]: vLLM ran another prompt); its read
// buffers can come from a [BufferPool] shared by the streams, given back by
// [ChunkReader.Release].
//
// [Converter] wires stages 3 and 4 for one turn (it owns the Emitter): feed it
// every [Chunk], write what it returns with an [Encoder], and read
// [Converter.Response] and [Converter.TokenIDs] at the end.
//
// # Model families
//
// Each model family writes reasoning and tool calls in its own format; vLLM
// names its parsers (--tool-call-parser, --reasoning-parser). Each of vLLM's
// parsers that stitch implements has a constructor here returning its
// [ToolParserSpec] / [ReasoningParserSpec] ([HermesToolParser],
// [Qwen3ReasoningParser], …); which names select which parsers is package
// family's registry, the one table of supported names. [ResolveMarkers] finds
// the specs' marker tokens in the model's tokenizer; [NewFamilyParser]
// composes one tool parser and an optional reasoning parser into a
// [FamilyParser], an [OutputParser]:
//
//	tool, reasoning := stream.Qwen3CoderToolParser(), stream.Qwen3ReasoningParser()
//	ids, err := stream.ResolveMarkers(tok, tool, reasoning)
//	p, err := stream.NewFamilyParser(tok.NewDecodeStream(), tool, reasoning, stream.FamilyOptions{
//		Markers: ids, EndOfTurn: stopIDs, ParallelToolCalls: true, Tools: schemas})
//
// Tool parsers: hermes, qwen3_coder, llama3_json, pythonic, mistral (both the
// [TOOL_CALLS][{…}] and the NAME[CALL_ID]ID[ARGS]{…} forms), deepseek_v3,
// deepseek_v31, kimi_k2, glm45, glm47. Reasoning parsers: qwen3, deepseek_r1,
// glm45, kimi_k2, mistral. Arguments stream as the JSON the model wrote; the
// XML (qwen3_coder, GLM) and Python-call (pythonic) families are converted to
// JSON as vLLM converts them (json.dumps of values typed by the request's
// tool schemas). A call id the model writes (Mistral, Kimi) is
// [Piece.CallID]. [ToolParserSpec.Forced] is the family's forced tool-call
// prefix for tool_choice "required" / named, parsed back with
// [FamilyOptions.Prefill]. A call that breaks after it began ends Incomplete
// and [FamilyParser.Malformed] reports it. gpt-oss output (Harmony) is read
// by [HarmonyParser], given the tokenizer's Harmony ids ([HarmonyTokens]).
//
// # Token ranges
//
// Every output item records the half-open range [Start, End) of generated token
// indexes that produced it ([ItemRange]), so callers can cut the generated ids at
// item (tool-round) boundaries. Ranges are disjoint and ordered; ids covered by
// no range produced no output (separating newlines, stop tokens, dropped calls).
//
// # Concurrency
//
// Nothing in this package is safe for concurrent use except where a type says so
// ([BufferPool]); each turn owns its own Decoder, Parser, Emitter and Encoder.
package stream
