// Package server is stitch's HTTP surface: the OpenAI Responses API (create, retrieve, delete,
// input items) on the token path to vLLM, pass-through of vLLM's other routes, health and metrics.
//
// # A turn
//
// POST /v1/responses is handled in four steps (turn.go): parse and validate the request; resolve
// previous_response_id to a stored checkpoint (its conversation items, store.Checkpoints); prepare
// the prompt ids with the model's engine (package prepare: render the conversation with the chat
// template and tokenize it, or reuse a token artifact); stream the completion from vLLM through
// package stream, parsed by the model's family (package family). The checkpoint is written before
// the terminal event is sent, so a client that saw response.completed can always continue from it;
// the prompt's after-response step (prepare.Prompt.Commit) then advances the artifact.
//
// A model's runtime (ModelRuntime) and the whole server are assembled by package stack
// (stack.Open, stack.NewModelRuntime): the one assembly path of stitch serve, stitch bench and the
// tests. The design: docs/design.md.
package server
