// Package server is stitch's HTTP surface: the OpenAI Responses API (create, retrieve, delete,
// input items) on the token path to vLLM, pass-through of vLLM's other routes, health and metrics.
//
// # A turn
//
// POST /v1/responses is handled in four steps, each behind a small interface declared here:
// parse and validate the request; resolve previous_response_id to a stored checkpoint (its
// conversation items); prepare the prompt ids (render the conversation with the model's chat template
// and tokenize it — or reuse a token artifact, see [Preparer]); stream the completion from vLLM through
// package stream, which turns token ids into Responses events. The checkpoint is written before the
// terminal event is sent, so a client that saw response.completed can always continue from it.
package server
