package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/stitchllm/stitch/internal/jsonappend"
	"github.com/stitchllm/stitch/modeldir"
	"github.com/stitchllm/stitch/render/bpe"
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

// loadModelTokenizer loads the tokenizer of dir (the bundled demo model when dir is "").
func loadModelTokenizer(dir string) (*bpe.Tokenizer, error) {
	d, err := modeldir.Open(dir)
	if err != nil {
		return nil, err
	}
	return d.Tokenizer()
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
