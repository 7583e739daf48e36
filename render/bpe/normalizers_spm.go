package bpe

import (
	"encoding/json"
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
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
	// Metaspace (pre-tokenizer and decoder).
	Replacement   *string `json:"replacement"`
	PrependScheme *string `json:"prepend_scheme"`
	Split         *bool   `json:"split"`
	// AddPrefixSpace is the field files written before tokenizers 0.19 carry instead of
	// prepend_scheme; the crate still reads it.
	AddPrefixSpace *bool `json:"add_prefix_space"`
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

// prependScheme is Metaspace's prepend_scheme: when a pre-token gets the replacement prepended.
type prependScheme uint8

const (
	prependAlways prependScheme = iota // every segment that does not already start with it
	prependFirst                       // only the segment at offset 0 of the input
	prependNever
)

// parsePrependScheme reads prepend_scheme as the crate (0.22) deserializes it: "always" when
// absent; a legacy add_prefix_space=false must come with "never" (the crate refuses the file
// otherwise), and add_prefix_space=true changes nothing.
func parsePrependScheme(c spmComponentJSON, what string) (prependScheme, error) {
	scheme := prependAlways
	if c.PrependScheme != nil {
		switch *c.PrependScheme {
		case "always":
		case "first":
			scheme = prependFirst
		case "never":
			scheme = prependNever
		default:
			return 0, fmt.Errorf("%w: %s Metaspace prepend_scheme %q", ErrInvalid, what, *c.PrependScheme)
		}
	}
	if c.AddPrefixSpace != nil && !*c.AddPrefixSpace && scheme != prependNever {
		return 0, fmt.Errorf("%w: %s Metaspace add_prefix_space does not match declared prepend_scheme", ErrInvalid, what)
	}
	return scheme, nil
}

// metaspaceReplacement reads Metaspace's replacement character ("▁" in every file seen).
func metaspaceReplacement(c spmComponentJSON, what string) (string, error) {
	if c.Replacement == nil || utf8.RuneCountInString(*c.Replacement) != 1 {
		return "", fmt.Errorf("%w: %s Metaspace needs a one-character replacement", ErrInvalid, what)
	}
	return *c.Replacement, nil
}

// metaspace is the Metaspace pre-tokenizer (tokenizers' pre_tokenizers/metaspace.rs): every " "
// becomes the replacement, the replacement is prepended per the scheme, and with split=true the
// segment is cut before each replacement (MergedWithNext).
type metaspace struct {
	replacement string
	prepend     prependScheme
	split       *literalSplit // nil: split=false, the segment is one word
}

// apply rewrites one segment between added tokens; atStart reports whether the segment begins at
// offset 0 of the input (the crate's offsets_original().0 == 0), which is what "first" tests.
func (m *metaspace) apply(seg string, atStart bool) string {
	seg = strings.ReplaceAll(seg, " ", m.replacement)
	if seg == "" || strings.HasPrefix(seg, m.replacement) {
		return seg
	}
	if m.prepend == prependAlways || (m.prepend == prependFirst && atStart) {
		return m.replacement + seg
	}
	return seg
}

// spmPreTokenizer is the pre-tokenizer of a SentencePiece-style file: none (nil, nil), a Split on
// a literal string, or Metaspace.
func parseSPMPreTokenizer(raw string) (*literalSplit, *metaspace, error) {
	if raw == "" || raw == "null" {
		return nil, nil, nil
	}
	var c spmComponentJSON
	if err := decodeStrict(raw, &c, "pre_tokenizer"); err != nil {
		return nil, nil, err
	}
	switch c.Type {
	case "Split":
	case "Metaspace":
		rep, err := metaspaceReplacement(c, "pre_tokenizer")
		if err != nil {
			return nil, nil, err
		}
		scheme, err := parsePrependScheme(c, "pre_tokenizer")
		if err != nil {
			return nil, nil, err
		}
		m := &metaspace{replacement: rep, prepend: scheme}
		if c.Split == nil || *c.Split { // the crate's default is split=true
			m.split = newLiteralSplit(rep, behaviorMergedWithNext)
		}
		return nil, m, nil
	default:
		return nil, nil, unsupported("pre_tokenizer %q in a SentencePiece-style tokenizer", c.Type)
	}
	lit, ok := c.Pattern.literal()
	if !ok || lit == "" {
		return nil, nil, unsupported("pre_tokenizer Split with pattern %s in a SentencePiece-style tokenizer", c.Pattern.describe())
	}
	b, ok := parseBehavior(c.Behavior)
	if !ok {
		return nil, nil, unsupported("pre_tokenizer Split behavior %q", c.Behavior)
	}
	if c.Invert {
		return nil, nil, unsupported("pre_tokenizer Split invert=true")
	}
	return newLiteralSplit(lit, b), nil, nil
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
