// Package upstream is stitch's client for a vLLM server (or `stitch sim`): the token-id completions
// stream, the model list and health.
//
// # Requests
//
// [CompletionRequest] is encoded by hand ([CompletionRequest.AppendJSON]): a continuation carries up to
// hundreds of thousands of token ids, and reflection-based encoding of them is the single largest cost of
// preparing a turn. Numbers the client sent (temperature, top_p) pass through with their original spelling.
//
// # Errors
//
// A non-2xx answer is a *[StatusError] carrying vLLM's error body; a failure to connect wraps
// [ErrUnreachable]. The caller maps both to HTTP statuses.
package upstream
