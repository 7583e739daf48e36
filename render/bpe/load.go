package bpe

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// Load parses a Hugging Face tokenizer.json and returns a tokenizer that reproduces the Rust
// tokenizers crate's ids for it. Load refuses, with an error wrapping [ErrUnsupported] that names the
// feature, any configuration it does not implement exactly; malformed input wraps [ErrInvalid].
// Load does not retain tokenizerJSON.
func Load(tokenizerJSON []byte) (*Tokenizer, error) {
	if len(tokenizerJSON) == 0 {
		return nil, fmt.Errorf("%w: empty input", ErrInvalid)
	}
	// The document is only read while Load runs and nothing returned points into it (every kept
	// string is copied into the tokenizer's own arena), so a zero-copy view is safe and saves a copy
	// of up to 30 MB.
	doc := unsafe.String(unsafe.SliceData(tokenizerJSON), len(tokenizerJSON))
	// SentencePiece-style files (any decoder but ByteLevel) have their own pipeline (spm.go).
	if t, err := loadSentencePiece(doc); !errors.Is(err, errNotSentencePiece) {
		return t, err
	}
	var (
		l    loader
		seen = map[string]bool{}
		err  error
	)
	sc := jsonScanner{s: doc}
	if sc.peek() != '{' {
		return nil, fmt.Errorf("%w: top level is not an object", ErrInvalid)
	}
	sc.members(func(k string) bool {
		seen[k] = true
		if k == "model" {
			err = l.parseModel(&sc)
			return err == nil
		}
		raw := sc.rawValue()
		if sc.err != nil {
			return false
		}
		switch k {
		case "version":
		case "truncation", "padding":
			if raw != "null" {
				err = unsupported("%s (must be null)", k)
			}
		case "added_tokens":
			err = l.parseAddedTokens(raw)
		case "normalizer":
			err = l.parseNormalizer(raw)
		case "pre_tokenizer":
			err = l.parsePreTokenizer(raw)
		case "post_processor":
			err = l.parsePostProcessor(raw)
		case "decoder":
			err = l.parseDecoder(raw)
		default:
			err = unsupported("top-level field %q", k)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if sc.err != nil {
		return nil, sc.err
	}
	if sc.peek() != 0 {
		return nil, fmt.Errorf("%w: data after the top-level object", ErrInvalid)
	}
	for _, k := range []string{"model", "decoder", "pre_tokenizer"} {
		if !seen[k] {
			return nil, fmt.Errorf("%w: missing %q", ErrInvalid, k)
		}
	}
	return l.build()
}

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// loader accumulates the parsed parts of tokenizer.json.
type loader struct {
	added        []addedTokenJSON
	normalizeNFC bool
	split        splitFunc // nil: the whole segment is one pre-token
	notes        []string  // what Load wants the operator to know (Tokenizer.Notes)
	post         *postProcessor
	model        modelJSON
	vocab        string // raw JSON of model.vocab
	merges       string // raw JSON of model.merges
}

// addedTokenJSON is one entry of "added_tokens".
type addedTokenJSON struct {
	ID         uint32 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"` // absent: the Rust default, !special
	Special    bool   `json:"special"`
}

// componentJSON is a normalizer, pre-tokenizer, post-processor or decoder object. Only the fields of
// the supported types are declared; decoding rejects any other field.
type componentJSON struct {
	Type           string          `json:"type"`
	Pretokenizers  []componentJSON `json:"pretokenizers"`
	Pattern        *patternJSON    `json:"pattern"`
	Behavior       string          `json:"behavior"`
	Invert         bool            `json:"invert"`
	AddPrefixSpace bool            `json:"add_prefix_space"`
	TrimOffsets    bool            `json:"trim_offsets"`
	UseRegex       *bool           `json:"use_regex"` // absent: true, as in the Rust crate
}

type patternJSON struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

// modelJSON holds the scalar fields of "model"; vocab and merges are read separately.
type modelJSON struct {
	Type                    string   `json:"type"`
	Dropout                 *float64 `json:"dropout"`
	UnkToken                *string  `json:"unk_token"`
	ContinuingSubwordPrefix *string  `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string  `json:"end_of_word_suffix"`
	FuseUnk                 bool     `json:"fuse_unk"`
	ByteFallback            bool     `json:"byte_fallback"`
	IgnoreMerges            bool     `json:"ignore_merges"`
}

// decodeStrict decodes one small JSON value into v, refusing fields v does not declare.
func decodeStrict(raw string, v any, what string) error {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			// Name the component's type: a field this loader does not know usually means a type
			// it does not implement.
			var probe struct {
				Type string `json:"type"`
			}
			if json.Unmarshal([]byte(raw), &probe) == nil && probe.Type != "" {
				return unsupported("%s %q: %v", what, probe.Type, err)
			}
			return unsupported("%s: %v", what, err)
		}
		return fmt.Errorf("%w: %s: %v", ErrInvalid, what, err)
	}
	return nil
}

func (l *loader) parseAddedTokens(raw string) error {
	if raw == "null" {
		return nil
	}
	if err := decodeStrict(raw, &l.added, "added_tokens"); err != nil {
		return err
	}
	for _, a := range l.added {
		switch {
		case a.Content == "":
			return fmt.Errorf("%w: added token %d has empty content", ErrInvalid, a.ID)
		case a.SingleWord:
			return unsupported("added token %q (id %d): single_word=true", a.Content, a.ID)
		case a.LStrip:
			return unsupported("added token %q (id %d): lstrip=true", a.Content, a.ID)
		case a.RStrip:
			return unsupported("added token %q (id %d): rstrip=true", a.Content, a.ID)
		}
	}
	return nil
}

func (l *loader) parsePreTokenizer(raw string) error {
	if raw == "null" {
		return unsupported("pre_tokenizer null (byte-level BPE needs a ByteLevel pre-tokenizer)")
	}
	var c componentJSON
	if err := decodeStrict(raw, &c, "pre_tokenizer"); err != nil {
		return err
	}
	steps := []componentJSON{c}
	if c.Type == "Sequence" {
		steps = c.Pretokenizers
	}
	// Splits (any pattern and behavior) in sequence, then one ByteLevel, which splits with the
	// GPT-2 pattern itself when use_regex is true (the default) and maps bytes to its alphabet.
	var (
		splits   []splitFunc
		isolated []string // the patterns, while every step so far is an Isolated regex Split
		notes    []string
	)
	byteLevel := false
	for _, st := range steps {
		if byteLevel {
			return unsupported("pre_tokenizer %s after ByteLevel", st.Type)
		}
		switch st.Type {
		case "Split":
			split, note, err := splitStep(st)
			if err != nil {
				return err
			}
			if note != "" {
				notes = append(notes, note)
			}
			splits = append(splits, split)
			if st.Pattern != nil && st.Pattern.Regex != nil && st.Behavior == "Isolated" && !st.Invert {
				isolated = append(isolated, *st.Pattern.Regex)
			}
		case "ByteLevel":
			if st.AddPrefixSpace {
				return unsupported("pre_tokenizer ByteLevel add_prefix_space=true")
			}
			if st.UseRegex == nil || *st.UseRegex {
				splits = append(splits, splitGPT2)
			}
			byteLevel = true
		default:
			return unsupported("pre_tokenizer %s", st.Type)
		}
	}
	if !byteLevel {
		return unsupported("pre_tokenizer without ByteLevel (byte-level BPE needs one)")
	}
	if fused, ok := fusedScanner(isolated); ok && len(isolated) == len(splits) {
		l.split = fused
		return nil
	}
	l.notes = append(l.notes, notes...)
	if len(splits) > 0 {
		l.split = chainSplits(splits)
	}
	return nil
}

func (l *loader) parseDecoder(raw string) error {
	if raw == "null" {
		return unsupported("decoder null")
	}
	var c componentJSON
	if err := decodeStrict(raw, &c, "decoder"); err != nil {
		return err
	}
	// The ByteLevel decoder's flags only matter for offsets; decoding maps code points to bytes.
	if c.Type != "ByteLevel" {
		return unsupported("decoder %q", c.Type)
	}
	return nil
}

func (l *loader) parseModel(sc *jsonScanner) error {
	var err error
	if l.model, l.vocab, l.merges, err = scanModel(sc); err != nil {
		return err
	}
	m := l.model
	switch {
	case m.UnkToken != nil:
		return unsupported("model unk_token %q", *m.UnkToken)
	case m.ByteFallback:
		return unsupported("model byte_fallback=true")
	}
	return m.check(l.vocab, l.merges)
}

// scanModel reads "model": its small fields decoded strictly, vocab and merges (megabytes) kept as
// views of the document for the single-pass scanners that build the vocab and the merge table.
func scanModel(sc *jsonScanner) (m modelJSON, vocab, merges string, err error) {
	if sc.peek() != '{' {
		return m, "", "", fmt.Errorf("%w: model is not an object", ErrInvalid)
	}
	var small strings.Builder
	small.WriteByte('{')
	sc.members(func(key string) bool {
		switch key {
		case "vocab", "merges":
			var raw string
			if c := sc.peek(); c == '{' || c == '[' {
				raw = sc.skipComposite()
			} else {
				raw = sc.rawValue()
			}
			if key == "vocab" {
				vocab = raw
			} else {
				merges = raw
			}
		default:
			raw := sc.rawValue()
			if small.Len() > 1 {
				small.WriteByte(',')
			}
			small.WriteString(quoteJSON(key))
			small.WriteByte(':')
			small.WriteString(raw)
		}
		return true
	})
	if sc.err != nil {
		return m, "", "", sc.err
	}
	small.WriteByte('}')
	err = decodeStrict(small.String(), &m, "model")
	return m, vocab, merges, err
}

// check refuses what neither BPE pipeline runs: another model type, dropout, subword affixes, and
// a vocab or merges of the wrong shape.
func (m modelJSON) check(vocab, merges string) error {
	switch {
	case m.Type != "BPE":
		return unsupported("model type %q", m.Type)
	case m.Dropout != nil && *m.Dropout != 0:
		return unsupported("model dropout %v", *m.Dropout)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "":
		return unsupported("model continuing_subword_prefix %q", *m.ContinuingSubwordPrefix)
	case m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return unsupported("model end_of_word_suffix %q", *m.EndOfWordSuffix)
	case !strings.HasPrefix(vocab, "{"):
		return fmt.Errorf("%w: model.vocab is missing or not an object", ErrInvalid)
	case !strings.HasPrefix(merges, "["):
		return fmt.Errorf("%w: model.merges is missing or not an array", ErrInvalid)
	}
	return nil
}
