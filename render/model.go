package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/stitchllm/stitch/render/bpe"
	"github.com/tidwall/gjson"
)

// Options configures LoadModel. The zero value loads the directory's default template.
type Options struct {
	// ChatTemplate, when non-empty, replaces the directory's template (like vLLM's
	// --chat-template).
	ChatTemplate string
	// TemplateName selects a named template when tokenizer_config.json holds a list of
	// {name, template}; "" means "default" (or the only one).
	TemplateName string
	// Now is the clock behind the template's strftime_now; nil leaves the template engine's default.
	Now func() time.Time
	// Fuel bounds the template engine's work per render; 0 leaves the engine's default.
	Fuel int
	// ContentFormat forces how message content reaches the template (vLLM's
	// --chat-template-content-format); "" detects it from the template as vLLM's "auto" does.
	ContentFormat ContentFormat
}

// Renderer is a model directory's tokenizer and chat template, loaded (LoadModel): it renders
// chat requests to prompt text and token ids exactly as vLLM's chat path does. A Renderer is safe
// for concurrent use; apart from a bounded cache of decoded tool lists it is immutable.
type Renderer struct {
	tok      *bpe.Tokenizer
	seg      bpeSegments
	maxAdded int // longest added token, in bytes
	tmpl     compiledTemplate
	template string
	format   ContentFormat // how message content reaches the template (chattemplate.go)
	specials []specialToken
	// tails holds scratch *[]uint32 for a continuation's new ids, which joinIDs copies into the
	// conversation's arena: reused, the scratch neither grows nor is zeroed again per turn.
	tails *sync.Pool // set by loadChat; shared by WithTemplate copies

	// TokenizerDigest is the sha256 hex of tokenizer.json (part of the fingerprint).
	TokenizerDigest string
	// TemplateDigest is the sha256 hex of the chat template text in use.
	TemplateDigest string
	// TemplateSource names where the template came from, e.g. "tokenizer_config.json" or
	// "chat_template.jinja".
	TemplateSource string
	// StopTokenIDs are the ids that end an assistant turn: eos_token, generation_config.json's
	// eos_token_id, and the usual end-of-turn tokens the vocabulary has as special tokens
	// (<|im_end|>, <|endoftext|>, <|eot_id|>).
	StopTokenIDs []uint32
	// GenerationOpensThink reports whether the generation prompt leaves a <think> block open
	// (the model's output then starts inside reasoning), probed by rendering a one-message chat.
	GenerationOpensThink bool
}

// specialToken is one of the tokenizer's special-token strings as the template sees it.
type specialToken struct {
	name   string
	value  string
	values []string // additional_special_tokens
	list   bool
}

// specialTokenKeys are transformers' SPECIAL_TOKENS_ATTRIBUTES (besides the additional list).
var specialTokenKeys = [...]string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// LoadModel reads a Hugging Face model directory: tokenizer.json, tokenizer_config.json
// (chat_template as a string or a list of {name, template}; special tokens as strings or
// AddedToken objects), an optional chat_template.jinja (which wins over tokenizer_config.json,
// as in transformers) and an optional generation_config.json (eos_token_id).
func LoadModel(fsys fs.FS, opts Options) (*Renderer, error) {
	// The small files first, so a bad directory fails before the tokenizer's ~1 s load.
	m, err := loadChat(fsys, opts)
	if err != nil {
		return nil, err
	}
	tokJSON, err := fs.ReadFile(fsys, "tokenizer.json")
	if err != nil {
		return nil, fmt.Errorf("%w: read tokenizer.json: %w", ErrModelDir, err)
	}
	if m.tok, err = bpe.Load(tokJSON); err != nil {
		return nil, fmt.Errorf("%w: load tokenizer.json: %w", ErrModelDir, err)
	}
	m.seg = bpeSegments{m.tok}
	m.maxAdded = m.tok.MaxAddedTokenLen()
	m.TokenizerDigest = digestBytes(tokJSON)
	m.StopTokenIDs, err = m.stopTokens(fsys)
	if err != nil {
		return nil, err
	}
	m.GenerationOpensThink = m.probeThink()
	return m, nil
}

func digestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// tokenContent reads a special token given as a string or as an AddedToken object.
func tokenContent(v gjson.Result) (string, bool) {
	switch {
	case v.Type == gjson.String:
		return v.Str, true
	case v.IsObject():
		c := v.Get("content")
		return c.Str, c.Type == gjson.String
	}
	return "", false
}

func parseSpecialTokens(config gjson.Result) ([]specialToken, error) {
	var out []specialToken
	for _, k := range specialTokenKeys {
		if s, ok := tokenContent(config.Get(k)); ok {
			out = append(out, specialToken{name: k, value: s})
		}
	}
	if add := config.Get("additional_special_tokens"); add.IsArray() {
		st := specialToken{name: "additional_special_tokens", list: true, values: []string{}}
		var bad bool
		add.ForEach(func(_, v gjson.Result) bool {
			s, ok := tokenContent(v)
			if !ok {
				bad = true
				return false
			}
			st.values = append(st.values, s)
			return true
		})
		if bad {
			return nil, fmt.Errorf("%w: tokenizer_config.json: additional_special_tokens holds a non-token", ErrModelDir)
		}
		out = append(out, st)
	}
	return out, nil
}

func pickTemplate(fsys fs.FS, config gjson.Result, opts Options) (text, source string, err error) {
	if opts.ChatTemplate != "" {
		return opts.ChatTemplate, "options", nil
	}
	if b, err := fs.ReadFile(fsys, "chat_template.jinja"); err == nil {
		return string(b), "chat_template.jinja", nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("%w: read chat_template.jinja: %w", ErrModelDir, err)
	}
	ct := config.Get("chat_template")
	switch {
	case ct.Type == gjson.String:
		if opts.TemplateName != "" && opts.TemplateName != "default" {
			return "", "", fmt.Errorf("%w: chat template %q not found (tokenizer_config.json has a single template)", ErrModelDir, opts.TemplateName)
		}
		return ct.Str, "tokenizer_config.json", nil
	case ct.IsArray():
		want := opts.TemplateName
		if want == "" {
			want = "default"
		}
		var names []string
		var found string
		var ok bool
		ct.ForEach(func(_, e gjson.Result) bool {
			name, tmpl := e.Get("name").Str, e.Get("template")
			names = append(names, name)
			if name == want && tmpl.Type == gjson.String {
				found, ok = tmpl.Str, true
				return false
			}
			return true
		})
		if !ok {
			return "", "", fmt.Errorf("%w: chat template %q not found in tokenizer_config.json (have %s)", ErrModelDir, want, strings.Join(names, ", "))
		}
		return found, "tokenizer_config.json:" + want, nil
	}
	return "", "", fmt.Errorf("%w: no chat template (neither chat_template.jinja nor tokenizer_config.json chat_template)", ErrModelDir)
}

func (m *Renderer) stopTokens(fsys fs.FS) ([]uint32, error) {
	var ids []uint32
	add := func(id uint32) {
		for _, x := range ids {
			if x == id {
				return
			}
		}
		ids = append(ids, id)
	}
	for _, st := range m.specials {
		if st.name == "eos_token" {
			if id, ok := m.tok.TokenID(st.value); ok {
				add(id)
			}
		}
	}
	if b, err := fs.ReadFile(fsys, "generation_config.json"); err == nil {
		eos := gjson.GetBytes(b, "eos_token_id")
		if eos.IsArray() {
			for _, v := range eos.Array() {
				add(uint32(v.Uint()))
			}
		} else if eos.Type == gjson.Number {
			add(uint32(eos.Uint()))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: read generation_config.json: %w", ErrModelDir, err)
	}
	for _, s := range []string{"<|im_end|>", "<|endoftext|>", "<|eot_id|>"} {
		if id, ok := m.tok.TokenID(s); ok && m.tok.IsSpecial(id) {
			add(id)
		}
	}
	return ids, nil
}

// WithTemplate returns a copy of m that renders with another chat template (same tokenizer).
func (m *Renderer) WithTemplate(source string, opts Options) (*Renderer, error) {
	c := *m
	if err := c.useTemplate(source, "options", opts); err != nil {
		return nil, err
	}
	c.GenerationOpensThink = c.probeThink()
	return &c, nil
}

// probeThink renders a one-message chat with and without the generation prompt and reports
// whether the added text opens a <think> block it does not close.
func (m *Renderer) probeThink() bool {
	msgs := []Message{{Role: "user", Content: "ping"}}
	with, err1 := m.RenderText(ChatRequest{Messages: msgs, AddGenerationPrompt: true})
	without, err2 := m.RenderText(ChatRequest{Messages: msgs})
	if err1 != nil || err2 != nil || !strings.HasPrefix(with, without) {
		return false
	}
	gen := with[len(without):]
	return strings.LastIndex(gen, "<think>") > strings.LastIndex(gen, "</think>")
}

// RendersTools reports whether the chat template shows the model a request's tools (the name of
// [Renderer.ToolTextRendered]'s probe tool appears). Some official templates render none (Llama
// 3.0, DeepSeek V3/V3.1, Gemma 3); a tool-call parser then never sees a call, because the model
// never learnt the tools existed — vLLM documents its own tool templates for them.
func (m *Renderer) RendersTools() bool { return m.ToolTextRendered().Name }

// ToolText names which strings of a function tool a chat template writes into the prompt, so a
// caller can bound a request's prompt from below without rendering it (server's input budget).
type ToolText struct {
	Name, Description, PropertyNames, PropertyDescriptions bool
}

// HarmonyToolText is what Harmony's TypeScript tool section writes: every one of them.
var HarmonyToolText = ToolText{Name: true, Description: true, PropertyNames: true, PropertyDescriptions: true}

// ToolTextRendered probes the chat template with a one-message chat offering one tool whose
// strings are distinct markers (a description and parameters, so templates that concatenate them
// do not raise) and reports which of them the prompt shows. A template that renders no tools
// reports none.
func (m *Renderer) ToolTextRendered() ToolText {
	const name, desc, prop, propDesc = "zqprobe_tool_name", "zqprobe tool summary", "zqprobe_arg", "zqprobe argument summary"
	description := desc
	tools := []Tool{{Name: name, Description: &description,
		Parameters: json.RawMessage(`{"type":"object","properties":{"` + prop + `":{"type":"string","description":"` + propDesc + `"}},"required":["` + prop + `"]}`)}}
	text, err := m.RenderText(ChatRequest{Messages: []Message{{Role: "user", Content: "ping"}}, Tools: tools, AddGenerationPrompt: true})
	if err != nil {
		return ToolText{}
	}
	return ToolText{Name: strings.Contains(text, name), Description: strings.Contains(text, desc),
		PropertyNames: strings.Contains(text, prop), PropertyDescriptions: strings.Contains(text, propDesc)}
}

// Tokenizer returns the model's tokenizer.
func (m *Renderer) Tokenizer() *bpe.Tokenizer { return m.tok }

// Template returns the chat template text in use.
func (m *Renderer) Template() string { return m.template }

// Encode tokenizes text with add_special_tokens=false (vLLM's chat path).
func (m *Renderer) Encode(text string) []uint32 { return m.tok.Encode(text) }

// EncodeTail tokenizes the part of a prompt that starts at an added-token boundary after offset 0,
// so that Encode(text[:o]) followed by EncodeTail(text[o:]) equals Encode(text)
// (bpe.Tokenizer.AppendEncodeTail).
func (m *Renderer) EncodeTail(text string) []uint32 {
	return m.tok.AppendEncodeTail(make([]uint32, 0, len(text)/3+1), text)
}

// EncodeWithBoundaries tokenizes text like Encode and also returns its boundary table, for a
// token artifact to extend next turn with Extend.
func (m *Renderer) EncodeWithBoundaries(text string) Encoding {
	return encodeWithBoundaries(m.seg, text)
}

// Extend tokenizes next reusing prev, the Encoding of an earlier prompt: ids up to the last
// added-token boundary where both texts agree are copied and only the rest is tokenized (the
// certified suffix of docs/design.md). The result always equals EncodeWithBoundaries(next).
func (m *Renderer) Extend(prev Encoding, next string) (Encoding, Reuse) {
	return extend(m.seg, prev, next)
}

// ExtendText is Extend for a previous encoding whose prompt text prevText is at hand: the texts
// are compared directly and only the changed tail of next is scanned and tokenized. The ids and
// boundary offsets equal EncodeWithBoundaries(next); the boundaries from index fresh on carry no
// digest until FillDigests.
func (m *Renderer) ExtendText(prev Encoding, prevText, next string) (enc Encoding, reuse Reuse, fresh int) {
	return m.ExtendTextFrom(prev, prevText, next, 0)
}

// ExtendTextFrom is ExtendText when the texts are known to agree on their first known bytes
// (RenderMemo.CommonPrefix): those are not compared again.
func (m *Renderer) ExtendTextFrom(prev Encoding, prevText, next string, known int) (enc Encoding, reuse Reuse, fresh int) {
	scratch, _ := m.tails.Get().(*[]uint32)
	if scratch == nil {
		scratch = new([]uint32)
	}
	defer m.tails.Put(scratch)
	return extendText(m.seg, m.maxAdded, prev, prevText, next, known, scratch)
}

// FillDigests computes the prefix digests of enc.Boundaries[from:] for the prompt text and
// returns the digest of the whole text (the same construction: the first DigestSize bytes of
// its SHA-256), hashing the text once.
func FillDigests(text string, enc *Encoding, from int) [DigestSize]byte {
	return fillDigests(text, enc, from)
}

// bpeSegments adapts *bpe.Tokenizer to segmentEncoder.
type bpeSegments struct{ *bpe.Tokenizer }

func (b bpeSegments) addedSpans(text string) []span {
	return b.AddedTokenSpans(text)
}

// ChatRequest is one render: chat messages after Responses mapping, plus template options.
type ChatRequest struct {
	Messages []Message
	// Tools are shown to the template: nil means the template sees tools=None, an empty non-nil
	// slice an empty list (vLLM passes `tools: []` on as []).
	Tools []Tool
	// AddGenerationPrompt appends the assistant header for the model's answer.
	AddGenerationPrompt bool
	// ContinueFinalMessage cuts the text after the last message's content so the model continues
	// it (transformers' continue_final_message); incompatible with AddGenerationPrompt.
	ContinueFinalMessage bool
	// ChatTemplateKwargs is a JSON object whose keys become template variables
	// (e.g. {"enable_thinking": false}); nil or null means none.
	ChatTemplateKwargs json.RawMessage
	// Documents is a JSON array passed as `documents` (RAG templates); nil means None.
	Documents json.RawMessage
	// Tenant scopes what the renderer keeps between renders (decoded tools lists): one tenant's
	// render never reuses, nor can time, what another's left. "" for a single-tenant caller.
	Tenant string
}

// reservedKwarg reports whether chat_template_kwargs may not set the variable k.
func reservedKwarg(k string) bool {
	switch k {
	case "messages", "tools", "documents", "add_generation_prompt", "continue_final_message", "chat_template":
		return true
	}
	return false
}

// templateVars is a render's input in template-engine-neutral form (raw JSON for client values).
type templateVars struct {
	tenant              string
	messages            []Message
	toolList            []Tool // nil: None
	documents           []byte // nil: None
	addGenerationPrompt bool
	specials            []specialToken
	kwargs              []kwarg
	format              ContentFormat
}

type kwarg struct {
	name  string
	value []byte // raw JSON
}

func (m *Renderer) vars(req *ChatRequest) (*templateVars, error) {
	v := &templateVars{
		tenant:              req.Tenant,
		messages:            req.Messages,
		addGenerationPrompt: req.AddGenerationPrompt,
		specials:            m.specials,
		format:              m.format,
	}
	v.toolList = req.Tools // encoded by the template, which may reuse the previous render's
	if len(req.Documents) > 0 {
		d := gjson.ParseBytes(req.Documents)
		if !gjson.ValidBytes(req.Documents) || !(d.IsArray() || d.Type == gjson.Null) {
			return nil, invalid("documents", "must be an array")
		}
		if d.IsArray() {
			v.documents = req.Documents
		}
	}
	if len(req.ChatTemplateKwargs) > 0 {
		if !gjson.ValidBytes(req.ChatTemplateKwargs) {
			return nil, invalid("chat_template_kwargs", "not valid JSON")
		}
		kw := gjson.ParseBytes(req.ChatTemplateKwargs)
		switch {
		case kw.Type == gjson.Null:
		case kw.IsObject():
			var err error
			kw.ForEach(func(k, val gjson.Result) bool {
				if reservedKwarg(k.Str) {
					err = invalid("chat_template_kwargs."+k.Str, "may not override %q", k.Str)
					return false
				}
				v.kwargs = append(v.kwargs, kwarg{name: k.Str, value: []byte(val.Raw)})
				return true
			})
			if err != nil {
				return nil, err
			}
		default:
			return nil, invalid("chat_template_kwargs", "must be an object")
		}
	}
	return v, nil
}

// RenderText applies the chat template to req after vLLM's message preprocessing and returns
// the prompt text. Template failures wrap ErrTemplate; bad input wraps ErrInvalidInput.
func (m *Renderer) RenderText(req ChatRequest) (string, error) {
	return m.renderText(&req, nil)
}

// RenderMemo is what a render recorded so that rendering a continuation of the same conversation
// can replay the template's work for the messages that did not change. It is immutable and
// belongs to the Renderer that made it.
type RenderMemo struct {
	m       *Renderer
	memo    *templateMemo
	common  int // see CommonPrefix
	textLen int // of the render's text
}

// CommonPrefix returns the length of the longest common prefix of this render's text and the
// text of the render whose memo RenderTextMemo was given (0 without one), found mostly without
// comparing bytes.
func (r *RenderMemo) CommonPrefix() int {
	if r == nil {
		return 0
	}
	return r.common
}

// RenderTextMemo renders like RenderText and also returns a RenderMemo. With prev from an earlier
// RenderTextMemo of this Renderer (nil is allowed), the template replays every part of its work
// whose inputs are unchanged; the text is identical to RenderText's either way.
func (m *Renderer) RenderTextMemo(req ChatRequest, prev *RenderMemo) (string, *RenderMemo, error) {
	var memo *templateMemo
	if prev != nil && prev.m == m {
		memo = prev.memo
	}
	replayed := memo != nil && memo.engine != nil
	text, err := m.renderText(&req, &memo)
	if err != nil {
		return "", nil, err
	}
	r := &RenderMemo{m: m, memo: memo}
	if replayed && memo.engine != nil {
		// The engine compared with its previous output; continue_final_message may have cut
		// either text after the engine ran.
		r.common = min(memo.engine.CommonPrefix(), len(text), prev.textLen)
	}
	r.textLen = len(text)
	return text, r, nil
}

func (m *Renderer) renderText(req *ChatRequest, memo **templateMemo) (string, error) {
	if req.AddGenerationPrompt && req.ContinueFinalMessage {
		return "", invalid("continue_final_message", "cannot be combined with add_generation_prompt")
	}
	v, err := m.vars(req)
	if err != nil {
		return "", err
	}
	text, err := m.tmpl.execute(v, memo)
	if err != nil {
		return "", fmt.Errorf("apply chat template %s: %w: %w", m.TemplateSource, ErrTemplate, err)
	}
	if req.ContinueFinalMessage && len(req.Messages) > 0 {
		// transformers (4.4x) apply_chat_template: cut after the last occurrence of the final
		// content, keeping its trailing whitespace when the template kept it.
		final, err := finalContent(&req.Messages[len(req.Messages)-1], m.format)
		if err != nil {
			return "", err
		}
		stripped := pyStrip(final)
		i := strings.LastIndex(text, stripped)
		if i < 0 {
			return "", fmt.Errorf("%w: continue_final_message: the final message does not appear in the rendered chat", ErrTemplate)
		}
		lstripped := strings.TrimLeftFunc(final, pySpace)
		if end := i + len(lstripped); end <= len(text) && text[i:end] == final {
			text = text[:end]
		} else {
			text = text[:i+len(stripped)]
		}
	}
	return text, nil
}

// Render returns the prompt text and its ids (tokenized with add_special_tokens=false).
func (m *Renderer) Render(req ChatRequest) (string, []uint32, error) {
	text, err := m.RenderText(req)
	if err != nil {
		return "", nil, err
	}
	return text, m.tok.Encode(text), nil
}

// pyStrip is Python's str.strip(): it removes the characters str.isspace() reports.
func pyStrip(s string) string { return strings.TrimFunc(s, pySpace) }

// pySpace reports whether Python's str.isspace() is true for r.
func pySpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x1680, 0x2028, 0x2029,
		0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}
