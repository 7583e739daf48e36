// Package render turns a conversation into the exact prompt token ids vLLM's chat path would
// build for it: Responses items → chat messages → vLLM's message preprocessing → the model's chat
// template ([github.com/stitchllm/stitch/render/jinja]) → the tokenizer
// ([github.com/stitchllm/stitch/render/bpe]) with add_special_tokens=false.
//
// Everything here is pure: inputs are []byte, json.RawMessage or an [io/fs.FS]; no network, no
// clock (the template's strftime_now uses [Options.Now]), no global state.
//
// # Responses items to chat messages
//
// [FromResponses] maps a Responses request (instructions, items, tools) to [Message] and [Tool]
// values; see its documentation for how function calls, outputs and reasoning items fold into
// assistant turns. Tool schemas and call arguments stay raw JSON bytes from the client to the
// template, so key order and number spelling (0.0, 1e-07, integers beyond int64) survive.
// Errors are [*InputError] values with the OpenAI `param` path, wrapping [ErrInvalidInput] or
// [ErrUnsupported].
//
// # vLLM preprocessing
//
// [Renderer.RenderText] hands the template what vllm/entrypoints/chat_utils.py does: content as a
// string (parts joined with "\n", None → ""), the kept keys role, content, tool_calls,
// reasoning and reasoning_content (assistant), tool_call_id (tool) and name; tool-call arguments
// given as a string are JSON-parsed (invalid → {}); tools as {"type":"function","function":
// {"name","description","parameters"}}; the tokenizer's special-token strings and the request's
// chat_template_kwargs as top-level variables. The "string" content format is assumed: templates
// that loop over content parts are not supported.
//
// # Certified suffix
//
// Tokenization is independent across added-token matches (bpe refuses tokenizers with
// lstrip/rstrip/normalized added tokens, so this always holds). [Renderer.EncodeWithBoundaries]
// records the start of every added-token match with a digest of the text before it;
// [Renderer.Extend] reuses an earlier [Encoding] up to the last boundary both texts share with an
// equal prefix and tokenizes only the rest. The result is always identical to a full encode.
//
// # Identity
//
// [Fingerprint] collects every input that can change model-visible tokens or the KV cache they
// land in; artifacts are reused only under an equal [Fingerprint.Digest].
package render
