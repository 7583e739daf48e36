package render

import (
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// ContentFormat is how message content reaches the chat template, vLLM's
// ChatTemplateContentFormat.
type ContentFormat string

const (
	// ContentString gives content as one string: an array's text parts joined with "\n",
	// empty parts dropped.
	ContentString ContentFormat = "string"
	// ContentOpenAI gives content as a list of {"type": "text", "text": …} parts (a string
	// content becomes one part, null none). vLLM picks it for templates that loop over a
	// message's content (Gemma 3, Mistral Small 3.2, Kimi K2, GLM-4.6/4.7).
	ContentOpenAI ContentFormat = "openai"
)

// ChatTemplate is the chat-template half of a model directory: tokenizer_config.json's special
// tokens and the chat template, without the tokenizer. It renders prompt text exactly as Renderer
// does, for directories whose tokenizer is not needed or not loadable. Safe for concurrent use.
type ChatTemplate struct{ m *Renderer }

// LoadChatTemplate reads tokenizer_config.json and the chat template of a model directory (the
// same rules as LoadModel: Options.ChatTemplate, then chat_template.jinja, then
// tokenizer_config.json's chat_template). tokenizer.json is not read.
func LoadChatTemplate(fsys fs.FS, opts Options) (*ChatTemplate, error) {
	m, err := loadChat(fsys, opts)
	if err != nil {
		return nil, err
	}
	return &ChatTemplate{m: m}, nil
}

// RenderText applies the template to req after vLLM's message preprocessing (see
// Renderer.RenderText).
func (c *ChatTemplate) RenderText(req ChatRequest) (string, error) { return c.m.RenderText(req) }

// ContentFormat returns the content format the template gets.
func (c *ChatTemplate) ContentFormat() ContentFormat { return c.m.format }

// ContentFormat returns the content format the model's template gets.
func (m *Renderer) ContentFormat() ContentFormat { return m.format }

// loadChat reads what rendering needs from a model directory, before and without the tokenizer.
func loadChat(fsys fs.FS, opts Options) (*Renderer, error) {
	cfg, err := fs.ReadFile(fsys, "tokenizer_config.json")
	if err != nil {
		return nil, fmt.Errorf("%w: read tokenizer_config.json: %w", ErrModelDir, err)
	}
	if !gjson.ValidBytes(cfg) {
		return nil, fmt.Errorf("%w: tokenizer_config.json is not valid JSON", ErrModelDir)
	}
	config := gjson.ParseBytes(cfg)
	m := &Renderer{tails: new(sync.Pool)}
	if m.specials, err = parseSpecialTokens(config); err != nil {
		return nil, err
	}
	text, source, err := pickTemplate(fsys, config, opts)
	if err != nil {
		return nil, err
	}
	if err := m.useTemplate(text, source, opts); err != nil {
		return nil, err
	}
	return m, nil
}

// useTemplate compiles text as m's chat template and detects its content format.
func (m *Renderer) useTemplate(text, source string, opts Options) error {
	t, err := compileTemplate(source, text, opts)
	if err != nil {
		return fmt.Errorf("%w: compile chat template from %s: %w", ErrModelDir, source, err)
	}
	switch opts.ContentFormat {
	case "":
		m.format = ContentString
		if t.loopsOverContent() {
			m.format = ContentOpenAI
		}
	case ContentString, ContentOpenAI:
		m.format = opts.ContentFormat
	default:
		return fmt.Errorf("%w: unknown content format %q (want %q or %q)", ErrModelDir, opts.ContentFormat, ContentString, ContentOpenAI)
	}
	m.tmpl, m.template, m.TemplateSource = t, text, source
	m.TemplateDigest = DigestString(text)
	return nil
}

// finalContent is the text continue_final_message continues, as transformers finds it: the
// content string, or in the openai format the text of the last part.
func finalContent(msg *Message, format ContentFormat) (string, error) {
	if format != ContentOpenAI || msg.Role == "tool" {
		// vLLM gives a tool message's content as a string in both formats.
		return msg.Content, nil
	}
	switch {
	case msg.NullContent || msg.Parts != nil && len(msg.Parts) == 0:
		return "", invalid("continue_final_message", "the final message has no text to continue")
	case msg.Parts == nil:
		return msg.Content, nil
	}
	last := msg.Parts[len(msg.Parts)-1]
	if last.Null {
		return "", invalid("continue_final_message", "the final message's last part has no text")
	}
	return last.Text, nil
}

// toolContent is a tool message's content in the openai format: vLLM joins an all-text list
// with "\n" again, keeping empty parts (unlike the string format).
func toolContent(msg *Message) (string, error) {
	if msg.Parts == nil {
		return msg.Content, nil
	}
	texts := make([]string, len(msg.Parts))
	for i, p := range msg.Parts {
		if p.Null {
			return "", invalid("content", "a tool message's part has null text")
		}
		texts[i] = p.Text
	}
	return strings.Join(texts, "\n"), nil
}
