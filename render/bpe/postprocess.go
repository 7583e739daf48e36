package bpe

import (
	"encoding/json"
	"fmt"
)

// Post-processors run only when an encoding asks for special tokens (the crate's
// add_special_tokens=true): [Tokenizer.EncodeWithSpecialTokens]. vLLM's chat path encodes the
// rendered prompt with add_special_tokens=false, so [Tokenizer.Encode] never applies them.
//
// Supported, as the crate composes them for a single sequence:
//   - TemplateProcessing: the "single" template, whose SpecialToken pieces become the listed ids
//     of special_tokens and whose Sequence piece "A" is the text's ids;
//   - ByteLevel: only adjusts offsets (trim_offsets), never ids;
//   - Sequence: each processor in order.
//
// Others (BertProcessing, RobertaProcessing) are refused.

// postProcessor is the parsed post-processor: the ids before and after a single sequence.
type postProcessor struct {
	prefix, suffix []uint32
}

type postProcessorJSON struct {
	Type           string                      `json:"type"`
	Processors     []json.RawMessage           `json:"processors"`
	AddPrefixSpace *bool                       `json:"add_prefix_space"`
	TrimOffsets    *bool                       `json:"trim_offsets"`
	UseRegex       *bool                       `json:"use_regex"`
	Single         []templatePieceJSON         `json:"single"`
	Pair           json.RawMessage             `json:"pair"`
	SpecialTokens  map[string]templateSpecJSON `json:"special_tokens"`
}

type templatePieceJSON struct {
	SpecialToken *struct {
		ID     string `json:"id"`
		TypeID uint32 `json:"type_id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID     string `json:"id"`
		TypeID uint32 `json:"type_id"`
	} `json:"Sequence"`
}

type templateSpecJSON struct {
	ID     string   `json:"id"`
	IDs    []uint32 `json:"ids"`
	Tokens []string `json:"tokens"`
}

func (l *loader) parsePostProcessor(raw string) error {
	if raw == "null" {
		return nil
	}
	if l.post == nil {
		l.post = &postProcessor{}
	}
	var c postProcessorJSON
	if err := decodeStrict(raw, &c, "post_processor"); err != nil {
		return err
	}
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		for _, p := range c.Processors {
			if err := l.parsePostProcessor(string(p)); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
		return l.post.addTemplate(c)
	}
	return unsupported("post_processor %q", c.Type)
}

// addTemplate applies a TemplateProcessing after what is already parsed: its single template wraps
// the current prefix + A + suffix.
func (p *postProcessor) addTemplate(c postProcessorJSON) error {
	var prefix, suffix []uint32
	seenA := false
	for _, piece := range c.Single {
		switch {
		case piece.SpecialToken != nil && piece.Sequence == nil:
			spec, ok := c.SpecialTokens[piece.SpecialToken.ID]
			if !ok {
				return fmt.Errorf("%w: post_processor TemplateProcessing: special token %q is not in special_tokens", ErrInvalid, piece.SpecialToken.ID)
			}
			if seenA {
				suffix = append(suffix, spec.IDs...)
			} else {
				prefix = append(prefix, spec.IDs...)
			}
		case piece.Sequence != nil && piece.SpecialToken == nil:
			if piece.Sequence.ID != "A" || seenA {
				return unsupported("post_processor TemplateProcessing single template with sequence %q", piece.Sequence.ID)
			}
			seenA = true
		default:
			return fmt.Errorf("%w: post_processor TemplateProcessing: bad template piece", ErrInvalid)
		}
	}
	if !seenA {
		return unsupported("post_processor TemplateProcessing single template without $A")
	}
	p.prefix = append(prefix, p.prefix...)
	p.suffix = append(p.suffix, suffix...)
	return nil
}

// EncodeWithSpecialTokens returns the ids of text as the crate's encode(text,
// add_special_tokens=true): [Tokenizer.Encode]'s ids wrapped by the post-processor's special tokens
// (for example Llama 3's <|begin_of_text|>). stitch's chat path does not use it: vLLM renders the
// chat template, whose text already holds every special token, and encodes it without them.
func (t *Tokenizer) EncodeWithSpecialTokens(text string) []uint32 {
	if t.post == nil {
		return t.Encode(text)
	}
	dst := append(make([]uint32, 0, len(text)/3+len(t.post.prefix)+len(t.post.suffix)+1), t.post.prefix...)
	dst = t.AppendEncode(dst, text)
	return append(dst, t.post.suffix...)
}
