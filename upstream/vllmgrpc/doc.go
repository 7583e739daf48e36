// Package vllmgrpc is stitch's client for vLLM's gRPC engine API (`vllm serve --grpc`, the
// smg-grpc-proto interface; service vllm.grpc.engine.VllmEngine), and for `stitch sim
// --grpc-listen`. The prompt goes out as token ids (TokenizedInput.input_ids), generated ids come
// back per chunk without detokenization, and a request whose context ends is aborted (Abort RPC),
// so vLLM frees its KV blocks.
//
// # Two ways in
//
// [Client.Generate] takes an [upstream.CompletionRequest] (the struct the HTTP path encodes) and
// returns a typed [Stream] of [Chunk]s. [Client.Completions] has the HTTP client's signature: it
// reads an encoded CompletionRequest and returns the SSE byte stream vLLM's /v1/completions would
// send (`data: {"choices":[{"token_ids":[…],"finish_reason":…}],"usage":…}` … `data: [DONE]`), so
// the server's chunk parser runs unchanged over either transport.
//
// # What the interface lacks
//
// The pinned interface version (see enginepb) has no cache_salt and no LoRA adapter field in
// GenerateRequest. [CheckConfig] refuses, at startup, a configuration that needs either; a
// CompletionRequest with a CacheSalt is refused per request as well, never sent unsalted.
//
// # Errors
//
// gRPC statuses map onto the HTTP client's errors: InvalidArgument, OutOfRange, FailedPrecondition
// → *upstream.StatusError 400 (body in vLLM's error shape), NotFound → 404, ResourceExhausted →
// 429, Unavailable and connection failures → upstream.ErrUnreachable, others → 500.
package vllmgrpc
