package server

import (
	"encoding/json"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/stream"
)

// ModelRuntime is the runtime of one served model: how its prompts are prepared and its output
// parsed. stack.NewModelRuntime builds it, the one assembly of stitch serve, stitch bench and the
// tests (package stack).
type ModelRuntime struct {
	// Name is the served model name (request "model", vLLM's --served-model-name).
	Name string
	// Engine prepares prompt ids for a conversation (package prepare).
	Engine prepare.Engine
	// Family is the model family: output parser, stop ids, forced tool calls (package family).
	Family family.Family
	// NewDecoder returns a fresh incremental token decoder for one stream.
	NewDecoder func() stream.TokenDecoder
	// MaxModelLen is the context length (prompt + output).
	MaxModelLen int
	// ChatTemplateKwargs are the profile's defaults (a JSON object, key order kept), or nil.
	ChatTemplateKwargs json.RawMessage
	// CacheSalt returns vLLM's cache_salt for a tenant ("" sends none).
	CacheSalt func(tenant string) string
	// EncodeTail tokenizes text that continues a prompt after an added token, such as a forced
	// tool call's opening (render.Renderer.EncodeTail; add_special_tokens=false).
	EncodeTail func(text string) []uint32
	// ToolText is which strings of a function tool the prompt shows (render.ToolText), for the
	// input budget's lower bound on a request's prompt (limits.go).
	ToolText render.ToolText
}
