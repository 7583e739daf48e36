package harmony

import (
	"fmt"
	"io/fs"

	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/render/bpe"
	"github.com/tidwall/gjson"
)

// IsHarmonyModel reports whether a model directory's config.json names a gpt-oss model
// (model_type "gpt_oss"), which vLLM serves through Harmony on /v1/responses. vLLM also picks
// Harmony for --tool-call-parser openai; that choice is the caller's.
func IsHarmonyModel(configJSON []byte) bool {
	return gjson.GetBytes(configJSON, "model_type").String() == "gpt_oss"
}

// LoadEncoder reads tokenizer.json from a gpt-oss model directory (no chat template is needed:
// vLLM does not use it on this route) and returns its Encoder.
func LoadEncoder(fsys fs.FS) (*Encoder, error) {
	raw, err := fs.ReadFile(fsys, "tokenizer.json")
	if err != nil {
		return nil, fmt.Errorf("%w: read tokenizer.json: %w", render.ErrModelDir, err)
	}
	tok, err := bpe.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json: %w", render.ErrModelDir, err)
	}
	enc, err := NewEncoder(tok)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", render.ErrModelDir, err)
	}
	return enc, nil
}

// Tokenizer returns the encoder's tokenizer (for a decode stream or for counting).
func (e *Encoder) Tokenizer() *bpe.Tokenizer { return e.tok }
