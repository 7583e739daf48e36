package bpe

import (
	"encoding/json"
	"fmt"
	"regexp/syntax"
	"strings"
)

// Normalizers, pre-tokenizers and post-processors of the SentencePiece-style pipeline (spm.go).

// spmComponentJSON is a normalizer, pre-tokenizer, post-processor or decoder object of a
// SentencePiece-style file. Only the fields of the supported types are declared; decoding rejects
// any other field.
type spmComponentJSON struct {
	Type        string             `json:"type"`
	Normalizers []spmComponentJSON `json:"normalizers"`
	Decoders    []spmComponentJSON `json:"decoders"`
	Pattern     *spmPatternJSON    `json:"pattern"`
	Content     *json.RawMessage   `json:"content"` // a string (Replace) or a character (Strip)
	Prepend     *string            `json:"prepend"`
	Behavior    string             `json:"behavior"`
	Invert      bool               `json:"invert"`
	Start       *int               `json:"start"`
	Stop        *int               `json:"stop"`
	// TemplateProcessing: only adds tokens with add_special_tokens=true, which stitch never uses.
	Single        json.RawMessage `json:"single"`
	Pair          json.RawMessage `json:"pair"`
	SpecialTokens json.RawMessage `json:"special_tokens"`
}

type spmPatternJSON struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

// literal returns the text a pattern matches when it is a literal string: a String pattern, or a
// Regex that is nothing but literal characters.
func (p *spmPatternJSON) literal() (string, bool) {
	switch {
	case p == nil:
		return "", false
	case p.String != nil:
		return *p.String, true
	case p.Regex != nil:
		re, err := syntax.Parse(*p.Regex, syntax.Perl)
		if err != nil || re.Op != syntax.OpLiteral || re.Flags&syntax.FoldCase != 0 {
			return "", false
		}
		return string(re.Rune), true
	}
	return "", false
}

func (p *spmPatternJSON) describe() string {
	switch {
	case p == nil:
		return "missing"
	case p.Regex != nil:
		return fmt.Sprintf("Regex %q", *p.Regex)
	case p.String != nil:
		return fmt.Sprintf("String %q", *p.String)
	}
	return "empty"
}

func (c *spmComponentJSON) contentString(what string) (string, error) {
	if c.Content == nil {
		return "", fmt.Errorf("%w: %s %s without content", ErrInvalid, what, c.Type)
	}
	var s string
	if err := json.Unmarshal(*c.Content, &s); err != nil {
		return "", fmt.Errorf("%w: %s %s content: %v", ErrInvalid, what, c.Type, err)
	}
	return s, nil
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// spmNormalizer is one normalization step.
type spmNormalizer struct {
	kind             normalizerKind
	prepend          string // normPrepend
	pattern, content string // normReplace
}

type normalizerKind uint8

const (
	normPrepend normalizerKind = iota // prepend to a non-empty string
	normReplace                       // replace every (leftmost, non-overlapping) match
	normNFC
)

func parseSPMNormalizer(raw string) ([]spmNormalizer, error) {
	if raw == "" || raw == "null" {
		return nil, nil
	}
	var c spmComponentJSON
	if err := decodeStrict(raw, &c, "normalizer"); err != nil {
		return nil, err
	}
	steps := []spmComponentJSON{c}
	if c.Type == "Sequence" {
		steps = c.Normalizers
	}
	var out []spmNormalizer
	for _, s := range steps {
		switch s.Type {
		case "Prepend":
			if s.Prepend == nil {
				return nil, fmt.Errorf("%w: normalizer Prepend without prepend", ErrInvalid)
			}
			out = append(out, spmNormalizer{kind: normPrepend, prepend: *s.Prepend})
		case "Replace":
			lit, ok := s.Pattern.literal()
			if !ok || lit == "" {
				return nil, unsupported("normalizer Replace with pattern %s", s.Pattern.describe())
			}
			content, err := s.contentString("normalizer")
			if err != nil {
				return nil, err
			}
			out = append(out, spmNormalizer{kind: normReplace, pattern: lit, content: content})
		case "NFC":
			out = append(out, spmNormalizer{kind: normNFC})
		default:
			return nil, unsupported("normalizer %q", s.Type)
		}
	}
	return out, nil
}

// normalize applies the normalization steps in order.
func (p *sentencePiece) normalize(s string) string {
	for _, n := range p.normalizers {
		switch n.kind {
		case normPrepend:
			if s != "" {
				s = n.prepend + s
			}
		case normReplace:
			s = strings.ReplaceAll(s, n.pattern, n.content)
		case normNFC:
			s = normalizeNFC(s)
		}
	}
	return s
}

// literalSplit is a Split pre-tokenizer on a literal string, run by the same split machinery as
// the byte-level families (split.go).
type literalSplit struct {
	split splitFunc
}

func parseSPMPreTokenizer(raw string) (*literalSplit, error) {
	if raw == "" || raw == "null" {
		return nil, nil
	}
	var c spmComponentJSON
	if err := decodeStrict(raw, &c, "pre_tokenizer"); err != nil {
		return nil, err
	}
	if c.Type != "Split" {
		return nil, unsupported("pre_tokenizer %q in a SentencePiece-style tokenizer", c.Type)
	}
	lit, ok := c.Pattern.literal()
	if !ok || lit == "" {
		return nil, unsupported("pre_tokenizer Split with pattern %s in a SentencePiece-style tokenizer", c.Pattern.describe())
	}
	b, ok := parseBehavior(c.Behavior)
	if !ok {
		return nil, unsupported("pre_tokenizer Split behavior %q", c.Behavior)
	}
	if c.Invert {
		return nil, unsupported("pre_tokenizer Split invert=true")
	}
	return newLiteralSplit(lit, b), nil
}

func newLiteralSplit(lit string, b splitBehavior) *literalSplit {
	return &literalSplit{split: matchSplitter(func(dst []span, s string) []span { return findLiteral(dst, s, lit) }, b, false)}
}

// appendSpans appends the pieces of s as the crate's NormalizedString::split computes them for
// the pattern's matches (leftmost, non-overlapping) and the behavior; empty pieces are dropped.
func (l *literalSplit) appendSpans(dst []span, s string) []span { return l.split(dst, s) }

// checkSPMPostProcessor accepts the post-processors that leave the ids of
// encode(add_special_tokens=false) unchanged: TemplateProcessing only adds its special tokens when
// asked to, and vLLM's chat path never asks (the chat template writes them).
func checkSPMPostProcessor(raw string) error {
	if raw == "" || raw == "null" {
		return nil
	}
	var c spmComponentJSON
	if err := decodeStrict(raw, &c, "post_processor"); err != nil {
		return err
	}
	if c.Type != "TemplateProcessing" {
		return unsupported("post_processor %q", c.Type)
	}
	return nil
}
