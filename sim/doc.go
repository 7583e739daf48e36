// Package sim is a CPU stand-in for `vllm serve`: the same HTTP API and field placement, the model's
// real tokenizer, a scripted deterministic model, and a prefix-cache model faithful enough to measure
// hit ratios and time to first token. stitch's tests, demo and benchmarks run against it.
//
// # Endpoints
//
// [Server] answers POST /v1/completions (string, token-id or batched prompts; stream and
// non-stream; return_token_ids; stop, stop_token_ids, seed, cache_salt, stream_options),
// POST /v1/chat/completions and POST /tokenize's chat form (when a [ChatRenderer] is configured),
// POST /tokenize's prompt form, POST /detokenize, GET /v1/models, GET /health and GET /metrics
// (Prometheus text from a registry owned by the Server). Responses follow vLLM's field order and
// placement: per-choice prompt_token_ids and token_ids, delta ids per stream chunk, prompt ids in
// the first chunk only, a usage chunk, then "data: [DONE]". By default the shapes and messages are
// the newest vLLM's (stream chunks serialized with exclude_unset, so no "usage": null;
// usage.prompt_tokens_details {"cached_tokens":N} with 0 included, as vLLM run with
// --enable-prompt-tokens-details reports it; max_tokens null meaning 16 on /v1/completions; the
// input_tokens context-length error; cache_salt and stop_token_ids validated); [Layout011] keeps
// vLLM 0.11's. Errors use vLLM's {"error":{"message","type","param","code"}} shape.
//
// # Prefix cache
//
// The KV cache is modelled as a table of full blocks of [Options.BlockSize] tokens keyed by chained
// hashes; the first block's hash also covers cache_salt. A lookup stops at the first missing block
// and is capped at n-1 tokens, in whole blocks, as vLLM's scheduler does. When a request ends, the
// full blocks of its prompt plus all generated tokens but the last (the last sampled token is never
// forwarded) are cached. Unreferenced blocks are evicted least recently used first once
// [Options.KVBlocks] is reached. usage.prompt_tokens_details.cached_tokens and the
// vllm:prefix_cache_* counters both come from this model, so they always agree. [Options.Hybrid]
// models a hybrid (linear + full attention) model under vLLM's align-mode caching: a hit also needs
// a saved recurrent state at its last block.
//
// # Scripted model
//
// The model decodes the prompt and reads it in the tokenizer's chat markup — ChatML (Qwen), Llama 3
// headers, Mistral [INST], DeepSeek <｜User｜>, GLM <|user|>, Kimi <|im_user|> or Harmony (gpt-oss)
// — with the offered tools (JSON in the prompt, Qwen3-Coder's XML, DeepSeek V3.1's markdown, or
// Harmony's TypeScript namespace) and tool results. It answers in the format of
// [Options.ToolCallParser] and [Options.ReasoningParser] (see family.go; default hermes with a
// Qwen3 think block): a tool call when tools are offered and the user spoke last (one per named
// tool when the user asks "in parallel"; a broken one when the user's text says "malformed call"),
// the rest of a call whose start the prompt prefilled (a forced tool_choice), a text answer quoting
// a tool result, or text of about [Options.OutputLen] tokens. Markers are the tokenizer's own
// tokens; [New] refuses a parser whose markers it lacks. The same seed and prompt always give the
// same tokens. With [Options.Drift] an answer is sometimes sent with a valid but non-canonical
// tokenization ("\n","\n" instead of "\n\n"), as real models do.
//
// # Latency and faults
//
// Time to first token is [Options.TTFTBase] plus [Options.PrefillPerToken] per uncached prompt
// token; each further token takes [Options.DecodePerToken]. [Options.Fast] turns every sleep of the
// latency model off. [Options.FailRate], [Options.DropAfter]/[Options.DropRate] and
// [Options.FirstByteDelay] inject faults for resilience tests.
//
// # Not simulated
//
// echo and n > 1 are refused with 400; logprobs are accepted and returned as null; prompt_logprobs
// only turns prefix-cache reads off (as in vLLM); temperature and top_p do not
// change the scripted answer; batched prompts run one after the other; requests never queue
// (vllm:num_requests_waiting is always 0). A tokenizer without any of the chat markups above is
// refused by [New].
package sim
