package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/stitchllm/stitch/configs/demomodel"
	"github.com/stitchllm/stitch/render/bpe"

	"github.com/stitchllm/stitch/internal/jsonappend"
)

// runTokenize reads JSON lines from stdin and writes one line per input line, in order, as it
// goes: a JSON string in gives the JSON array of its token ids (add_special_tokens=false, added
// tokens in the text become their ids); with --decode a JSON array of ids in gives the decoded JSON
// string. Empty lines are skipped. The first bad line stops the run with its line number (exit 1).
func runTokenize(ctx context.Context, env cliEnv, args []string) error {
	fset := newFlagSet(env, "tokenize", "[--model-dir DIR] [--decode] < lines.jsonl")
	modelDir := fset.String("model-dir", "", "Hugging Face model directory with tokenizer.json (or tokenizer.json.gz); default: the embedded Qwen3 demo model")
	decode := fset.Bool("decode", false, "decode: read JSON arrays of ids, write JSON strings")
	special := fset.Bool("add-special-tokens", false, "encode with add_special_tokens=true (the post-processor's BOS/EOS; vLLM's chat path does not)")
	if err := parseFlags(env, fset, args); err != nil {
		return err
	}
	if *decode && *special {
		return fmt.Errorf("--decode and --add-special-tokens cannot be combined")
	}
	tok, err := loadModelTokenizer(*modelDir)
	if err != nil {
		return err
	}
	for _, note := range tok.Notes() {
		fmt.Fprintf(env.stderr, "stitch tokenize: note: %s\n", note)
	}
	encode := tok.AppendEncode
	if *special {
		encode = func(dst []uint32, s string) []uint32 { return append(dst, tok.EncodeWithSpecialTokens(s)...) }
	}
	return tokenizeLines(ctx, tok, *decode, encode, env.stdin, env.stdout)
}

// loadModelTokenizer loads tokenizer.json (or tokenizer.json.gz) from dir, or from the embedded demo
// model when dir is empty.
func loadModelTokenizer(dir string) (*bpe.Tokenizer, error) {
	var fsys fs.FS
	if dir != "" {
		fsys = os.DirFS(dir)
	} else {
		var err error
		if fsys, err = demomodel.FS(); err != nil {
			return nil, err
		}
	}
	data, err := readTokenizerJSON(fsys)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer.json: %w", err)
	}
	tok, err := bpe.Load(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer.json: %w", err)
	}
	return tok, nil
}

// readTokenizerJSON reads tokenizer.json, or gunzips tokenizer.json.gz when there is no
// tokenizer.json; a directory with tiktoken.model and neither gets an error that says why.
func readTokenizerJSON(fsys fs.FS) ([]byte, error) {
	data, err := fs.ReadFile(fsys, "tokenizer.json")
	if errors.Is(err, fs.ErrNotExist) {
		var gz []byte
		if gz, err = fs.ReadFile(fsys, "tokenizer.json.gz"); err == nil {
			data, err = gunzip(gz)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		if _, terr := fs.Stat(fsys, "tiktoken.model"); terr == nil {
			// Kimi K2 (and other tiktoken models with custom tokenizer code) ship no tokenizer.json.
			return nil, fmt.Errorf("%w: the model directory has tiktoken.model (a tiktoken tokenizer with custom Python code, as Kimi K2 ships) and no Hugging Face tokenizer.json; stitch only reproduces tokenizer.json tokenizers exactly, so serve this model without stitch's token path", err)
		}
	}
	return data, err
}

// modelDirFS serves a model directory to render.LoadModel with tokenizer.json read as
// readTokenizerJSON does (tokenizer.json.gz accepted, tiktoken directories refused clearly).
type modelDirFS struct{ fs.FS }

func (m modelDirFS) ReadFile(name string) ([]byte, error) {
	if name == "tokenizer.json" {
		return readTokenizerJSON(m.FS)
	}
	return fs.ReadFile(m.FS, name)
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func tokenizeLines(ctx context.Context, tok *bpe.Tokenizer, decode bool, encode func([]uint32, string) []uint32, in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(out, 1<<16)
	var (
		ids []uint32
		buf []byte
	)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Lines end at "\n" only: U+2028 inside a JSON string is not a line break.
		line, readErr := r.ReadBytes('\n')
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			w.Flush()
			return fmt.Errorf("read line %d: %w", n, readErr)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var err error
			if decode {
				ids = ids[:0]
				if err = json.Unmarshal(line, &ids); err == nil {
					buf = jsonappend.StringJS(buf[:0], tok.Decode(ids))
				}
			} else {
				var s string
				if err = json.Unmarshal(line, &s); err == nil {
					ids = encode(ids[:0], s)
					buf = appendIDs(buf[:0], ids)
				}
			}
			if err != nil {
				w.Flush()
				return fmt.Errorf("line %d: %w", n, err)
			}
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
		if readErr != nil { // io.EOF
			break
		}
		// Stream: flush whenever no more input is waiting, so interactive use sees each answer.
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func appendIDs(dst []byte, ids []uint32) []byte { return jsonappend.Uint32s(dst, ids) }
