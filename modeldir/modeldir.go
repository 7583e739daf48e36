// Package modeldir opens a Hugging Face model directory the one way every stitch command reads
// it (serve, sim, render, tokenize, bench): tokenizer.json or tokenizer.json.gz, config.json's
// family markers, the chat template (tokenizer_config.json, chat_template.jinja, or a file that
// replaces them), and the bundled demo model when no directory is given. Each failure is one
// error text that names the directory and the file.
package modeldir

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/configs/demomodel"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/render/bpe"
	"github.com/stitchllm/stitch/render/harmony"
)

// Dir is an opened model directory. Its methods read files when called; a Dir holds no parsed
// state and may be used from several goroutines.
type Dir struct {
	raw  fs.FS
	name string // the path, or "the bundled demo model"
}

// Open opens the model directory at path, or the bundled demo model (Qwen3) when path is "".
// A path that is not a readable directory fails here, naming it.
func Open(path string) (*Dir, error) {
	if path == "" {
		fsys, err := demomodel.FS()
		if err != nil {
			return nil, err
		}
		return &Dir{raw: fsys, name: "the bundled demo model"}, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, &Error{Dir: path, Err: err}
	}
	if !st.IsDir() {
		return nil, &Error{Dir: path, Err: errors.New("not a directory")}
	}
	return &Dir{raw: os.DirFS(path), name: path}, nil
}

// FromFS is Open over a file system (tests, embedded models); name appears in errors.
func FromFS(fsys fs.FS, name string) *Dir { return &Dir{raw: fsys, name: name} }

// Name is the directory's path (or "the bundled demo model").
func (d *Dir) Name() string { return d.name }

// FS is the directory as the loaders read it: tokenizer.json is TokenizerJSON's bytes.
func (d *Dir) FS() fs.FS { return resolvedFS{d} }

// Error is a model directory that cannot be used: "invalid model directory DIR: what failed",
// what failed naming the file. errors.Is(err, render.ErrModelDir) holds, and the cause's chain
// (fs.ErrNotExist, …) is kept.
type Error struct {
	Dir string
	Err error
}

func (e *Error) Error() string {
	detail := strings.TrimPrefix(e.Err.Error(), render.ErrModelDir.Error()+": ")
	return render.ErrModelDir.Error() + " " + e.Dir + ": " + detail
}

// Unwrap returns render.ErrModelDir and the cause.
func (e *Error) Unwrap() []error { return []error{render.ErrModelDir, e.Err} }

// errorf wraps err as a failure of this directory's file (what: "read tokenizer.json", …).
func (d *Dir) errorf(what string, err error) error {
	return &Error{Dir: d.name, Err: fmt.Errorf("%s: %w", what, err)}
}

// TokenizerJSON reads tokenizer.json, or inflates tokenizer.json.gz when there is no
// tokenizer.json. A directory with tiktoken.model and neither is refused with the reason.
func (d *Dir) TokenizerJSON() ([]byte, error) {
	data, err := d.tokenizerJSON()
	if err != nil {
		return nil, d.errorf("read tokenizer.json", err)
	}
	return data, nil
}

// tokenizerJSON is TokenizerJSON with the error unwrapped (the loaders name the file).
func (d *Dir) tokenizerJSON() ([]byte, error) {
	data, err := fs.ReadFile(d.raw, "tokenizer.json")
	if !errors.Is(err, fs.ErrNotExist) {
		return data, err
	}
	gz, gerr := fs.ReadFile(d.raw, "tokenizer.json.gz")
	switch {
	case gerr == nil:
		data, err := gunzip(gz)
		if err != nil {
			return nil, fmt.Errorf("tokenizer.json.gz: %w", err)
		}
		return data, nil
	case !errors.Is(gerr, fs.ErrNotExist):
		return nil, gerr
	}
	if _, terr := fs.Stat(d.raw, "tiktoken.model"); terr == nil {
		// Kimi K2 (and other tiktoken models with custom tokenizer code) ship no tokenizer.json.
		return nil, fmt.Errorf("%w: the directory has tiktoken.model (a tiktoken tokenizer with custom Python code, as Kimi K2 ships) and no Hugging Face tokenizer.json; stitch only reproduces tokenizer.json tokenizers exactly, so serve this model without stitch's token path", err)
	}
	return nil, err
}

// Tokenizer loads the directory's tokenizer.
func (d *Dir) Tokenizer() (*bpe.Tokenizer, error) {
	data, err := d.TokenizerJSON()
	if err != nil {
		return nil, err
	}
	tok, err := bpe.Load(data)
	if err != nil {
		return nil, d.errorf("load tokenizer.json", err)
	}
	return tok, nil
}

// Config is what stitch reads from config.json.
type Config struct {
	// Present is false when the directory has no config.json (every other field is then zero).
	Present bool
	// VocabSize is vocab_size, or text_config.vocab_size for multimodal configs, as vLLM's
	// ModelConfig.get_vocab_size reads it.
	VocabSize int
	// Harmony is model_type gpt_oss: vLLM serves the model through Harmony on /v1/responses.
	Harmony bool
}

// Config reads config.json (a zero Config without one).
func (d *Dir) Config() (Config, error) {
	data, err := fs.ReadFile(d.raw, "config.json")
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, d.errorf("read config.json", err)
	}
	if !gjson.ValidBytes(data) {
		return Config{}, d.errorf("config.json", errors.New("not valid JSON"))
	}
	v := gjson.GetBytes(data, "vocab_size")
	if !v.Exists() {
		v = gjson.GetBytes(data, "text_config.vocab_size")
	}
	return Config{Present: true, VocabSize: int(v.Int()), Harmony: harmony.IsHarmonyModel(data)}, nil
}

// Renderer loads the tokenizer and chat template (opts.ChatTemplate replaces the directory's).
func (d *Dir) Renderer(opts render.Options) (*render.Renderer, error) {
	m, err := render.LoadModel(d.FS(), opts)
	if err != nil {
		return nil, d.wrap(err)
	}
	return m, nil
}

// ChatTemplate loads the chat template alone (no tokenizer.json needed).
func (d *Dir) ChatTemplate(opts render.Options) (*render.ChatTemplate, error) {
	ct, err := render.LoadChatTemplate(d.raw, opts)
	if err != nil {
		return nil, d.wrap(err)
	}
	return ct, nil
}

// harmonyNoTemplate stands in for a chat template on a gpt-oss model: its prompts are rendered
// with Harmony, never with a template, so rendering it is an error, not a silent wrong prompt.
const harmonyNoTemplate = "{{ raise_exception('gpt-oss prompts are rendered with Harmony, not a chat template') }}"

// HarmonyRenderer loads a gpt-oss directory for Harmony: its tokenizer (plus the special tokens
// of tokenizer_config.json when there is one) and a template that refuses to render. Like vLLM
// (transformers loads a tokenizer.json-only directory through config.json's model_type), it needs
// only tokenizer.json; `stitch render --responses` and `stitch serve` accept the same directories.
func (d *Dir) HarmonyRenderer() (*render.Renderer, *harmony.Encoder, error) {
	m, err := render.LoadModel(harmonyFS{d.FS()}, render.Options{ChatTemplate: harmonyNoTemplate})
	if err != nil {
		return nil, nil, d.wrap(err)
	}
	enc, err := harmony.NewEncoder(m.Tokenizer())
	if err != nil {
		return nil, nil, d.errorf("Harmony tokens in tokenizer.json", err)
	}
	return m, enc, nil
}

// wrap names the directory in a loader's error (which names the file).
func (d *Dir) wrap(err error) error { return &Error{Dir: d.name, Err: err} }

// ReadTemplateFile reads a --chat-template file ("" gives "").
func ReadTemplateFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return string(b), nil
}

// resolvedFS serves tokenizer.json as TokenizerJSON reads it (from tokenizer.json.gz when needed).
type resolvedFS struct{ d *Dir }

func (r resolvedFS) Open(name string) (fs.File, error) { return r.d.raw.Open(name) }

// ReadFile implements fs.ReadFileFS.
func (r resolvedFS) ReadFile(name string) ([]byte, error) {
	if name == "tokenizer.json" {
		return r.d.tokenizerJSON()
	}
	return fs.ReadFile(r.d.raw, name)
}

// harmonyFS answers an empty tokenizer_config.json for a directory without one (Harmony takes
// its special tokens from the tokenizer and its own encoding, not from that file).
type harmonyFS struct{ fs.FS }

// ReadFile implements fs.ReadFileFS.
func (h harmonyFS) ReadFile(name string) ([]byte, error) {
	data, err := fs.ReadFile(h.FS, name)
	if name == "tokenizer_config.json" && errors.Is(err, fs.ErrNotExist) {
		return []byte("{}"), nil
	}
	return data, err
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(zr)
}
