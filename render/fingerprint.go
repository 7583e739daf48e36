package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
)

// RendererVersion names the behaviour of this package's message preprocessing and certified
// suffix. Bump it whenever a change could alter a prompt's ids, so every artifact made by the
// old code stops matching.
const RendererVersion = "stitch-render/1"

// Fingerprint is a model execution identity (docs/design.md "Identities"): an artifact is only reused
// when the new request's fingerprint digest equals the artifact's. Every field that can change a
// model-visible token or the KV cache it lands in belongs here.
type Fingerprint struct {
	ServedModel     string // the model name the client asked for
	TokenizerDigest string // sha256 hex of tokenizer.json (Renderer.TokenizerDigest)
	TemplateDigest  string // sha256 hex of the chat template text (Renderer.TemplateDigest)
	RendererVersion string // RendererVersion
	ToolCallParser  string // e.g. "hermes"
	ReasoningParser string // e.g. "qwen3"
	// ChatTemplateKwargs is the effective chat_template_kwargs (CompactJSON; "" = none).
	ChatTemplateKwargs string
	LoRA               string // LoRA adapter name ("" = base model)
	CacheSalt          string // vLLM cache_salt sent with the prompt
	Multimodal         string // multimodal identity ("" for text-only)
	InstructionsDigest string // sha256 hex of the request's instructions (DigestString)
	ToolsDigest        string // sha256 hex of the rendered tools value (ToolsDigest)
}

// Digest returns the sha256 hex digest over every field, each length-prefixed and tagged so
// that no two different fingerprints share a digest.
func (f Fingerprint) Digest() string {
	h := sha256.New()
	var n [8]byte
	for _, kv := range [...][2]string{
		{"served_model", f.ServedModel},
		{"tokenizer", f.TokenizerDigest},
		{"template", f.TemplateDigest},
		{"renderer", f.RendererVersion},
		{"tool_call_parser", f.ToolCallParser},
		{"reasoning_parser", f.ReasoningParser},
		{"chat_template_kwargs", f.ChatTemplateKwargs},
		{"lora", f.LoRA},
		{"cache_salt", f.CacheSalt},
		{"multimodal", f.Multimodal},
		{"instructions", f.InstructionsDigest},
		{"tools", f.ToolsDigest},
	} {
		for _, s := range kv {
			binary.BigEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// DigestString returns the sha256 hex digest of s.
func DigestString(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// ToolsDigest returns the sha256 hex digest of the tools as the template receives them ("" digest
// input when there are none), so two requests with equal digests show the model identical tool
// definitions. The JSON is compacted first: the template sees parsed values, so a client's
// spacing inside a schema does not change the identity.
func ToolsDigest(tools []Tool) string {
	if len(tools) == 0 {
		return DigestString("")
	}
	js := appendToolsJSON(nil, tools)
	var compact bytes.Buffer
	if err := json.Compact(&compact, js); err == nil {
		js = compact.Bytes()
	}
	sum := sha256.Sum256(js)
	return hex.EncodeToString(sum[:])
}

// CompactJSON returns raw JSON without insignificant whitespace, keeping key order and number
// spelling (unlike a decode/encode round trip), for Fingerprint.ChatTemplateKwargs. Invalid JSON
// is returned unchanged; an empty input or null gives "".
func CompactJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	if s := b.String(); s != "null" {
		return s
	}
	return ""
}
