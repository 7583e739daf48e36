// Package harmony renders Responses requests for gpt-oss models the way vLLM's /v1/responses does
// for them: Responses items → Harmony messages → token ids, with openai_harmony's
// HARMONY_GPT_OSS encoding (render_conversation_for_completion, next role assistant,
// auto_drop_analysis on). vLLM does not use the Jinja chat template on this route.
//
// The package has two layers, usable separately:
//
//   - [FromResponses] maps a Responses request (instructions, reasoning effort, tools, items) to
//     [Message] values exactly as vLLM's serving code does (vllm/entrypoints/openai/responses/
//     serving.py and harmony.py, parser/harmony_utils.py): the system message (identity,
//     knowledge cutoff, conversation start date, reasoning effort, valid channels), the developer
//     message (instructions and the `functions` tool namespace), then one message per item.
//   - [Encoder.Render] turns messages into token ids and text exactly as openai_harmony's
//     encoding.rs does: header tokens, message text encoded as ordinary text (a typed "<|end|>"
//     is text, not the special token), each content part encoded on its own, tools rendered as
//     the TypeScript-like `namespace functions { … }` block, analysis messages dropped once a
//     final answer ends the conversation.
//
// Everything is pure: no clock (the start date is an option, see [StartDate]), no environment
// (the integrator maps VLLM_SYSTEM_START_DATE and VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS to
// [Options]), no global state. JSON (tool schemas, defaults) is read with gjson over the raw
// request bytes, so key order and number spelling follow the client, as Python's json and
// serde_json's preserve_order do for vLLM.
//
// # Differences from vLLM, on purpose
//
//   - On a continuation (previous_response_id) the caller passes the earlier items followed by the
//     new input, and the instructions, tools and effort to render: vLLM's gpt-oss path replays
//     its stored Harmony messages, keeping the first turn's system and developer messages (its
//     FIXME "request params like reasoning and instructions are ignored"), so package prepare
//     passes the chain's first ones in canonical mode. With [Request.Notes] an earlier output
//     item renders with the header the model generated it with ([Generated]), as vLLM's message
//     store holds it, and [Request.NewInput] maps the new input as a continuation does.
//   - Image, file and audio content parts are an error (render.ErrUnsupported); vLLM renders
//     them as empty text.
//   - Tool types other than function (and Codex namespaces, flattened) are skipped and reported;
//     vLLM raises for any type but function and its built-in tools.
package harmony
